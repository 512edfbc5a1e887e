/**
 * A real OpenID Connect provider for the tests: tests/oidc-provider/provider.mjs
 * (oauth2-mock-server from npm; test.sh installs it), on a loopback port, which the local gateway
 * may reach (FORGEBENCH_PUSH_ALLOWED_CIDRS=127.0.0.0/8). Its tokens are fetched with plain fetch:
 * the provider is the application's side, never the SDK's.
 */

import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** build/test/support/ -> the repository's tests/oidc-provider/ */
const FOLDER = fileURLToPath(new URL("../../../../../tests/oidc-provider/", import.meta.url));

export interface OidcProvider {
  /** The issuer, exactly as its tokens carry it in `iss` (`http://localhost:PORT`). */
  issuer: string;
  /** A token from the token endpoint by the client-credentials grant: its `sub` is `clientId`. */
  clientCredentials(clientId: string, audience: string): Promise<{ token: string; expiresIn: number }>;
  /** A token signed with the provider's key, its claims laid over the provider's own. */
  signed(claims: Record<string, unknown>, expiresIn?: number): Promise<string>;
  stop(): Promise<void>;
}

export async function startProvider(): Promise<OidcProvider> {
  const child: ChildProcess = spawn(process.execPath, ["provider.mjs"], { cwd: FOLDER, stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const first = await Promise.race([
    once(lines, "line").then(([line]) => String(line)),
    once(child, "exit").then(() => {
      throw new Error("the OIDC provider exited before it listened (npm ci --prefix tests/oidc-provider?)");
    }),
  ]);
  const issuer = (JSON.parse(first) as { issuer: string }).issuer;
  return {
    issuer,
    async clientCredentials(clientId, audience) {
      const response = await fetch(`${issuer}/token`, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "client_credentials", client_id: clientId, aud: audience }).toString(),
      });
      if (response.status !== 200) throw new Error(`the token endpoint answered ${response.status}`);
      const body = (await response.json()) as { access_token: string; expires_in: number };
      return { token: body.access_token, expiresIn: body.expires_in };
    },
    async signed(claims, expiresIn) {
      const response = await fetch(`${issuer}/test/token`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ kid: "rs", claims, expires_in: expiresIn }),
      });
      if (response.status !== 200) throw new Error(`the provider's test endpoint answered ${response.status}`);
      return ((await response.json()) as { token: string }).token;
    },
    async stop() {
      lines.close();
      if (child.exitCode !== null) return;
      const exited = once(child, "exit");
      child.stdin?.end();
      await exited;
    },
  };
}

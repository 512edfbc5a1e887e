/**
 * The package from CommonJS: `require("@seedlinglabs/forgebench-sdk")` loads the built package
 * (the "require" condition of package.json "exports", served by Node's require(esm), hence
 * engines.node `^20.19.0 || >=22.12.0`), with the same classes as `import`.
 */

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";

import * as imported from "@seedlinglabs/forgebench-sdk";

const PACKAGE = "@seedlinglabs/forgebench-sdk";

describe("require() of the package", () => {
  test("a CommonJS require gives the same module as import, and makes a client", () => {
    const required = createRequire(import.meta.url)(PACKAGE) as typeof imported;
    assert.equal(required.Forgebench, imported.Forgebench, "one module, not a second copy");
    assert.equal(required.UnprocessableEntityError, imported.UnprocessableEntityError);
    const client = new required.Forgebench({ baseUrl: "http://127.0.0.1:1", apiKey: "fb_agt_" + "2".repeat(64) });
    assert.equal(typeof client.agents.call, "function");
    for (const api of [client.tenants, client.members, client.audit, client.calls, client.signingKeys, client.settings, client.policies]) {
      assert.equal(typeof api, "object");
    }
    assert.equal(typeof client.agents.events, "function");
  });

  test("a .cjs script run by node requires it and constructs a client", () => {
    // Beside this test, inside the package's directory, so that its name resolves to itself.
    const scratch = mkdtempSync(join(dirname(fileURLToPath(import.meta.url)), "require-"));
    try {
      const script = join(scratch, "client.cjs");
      writeFileSync(
        script,
        [
          `"use strict";`,
          `const { Forgebench, ForgebenchError, DEFAULT_MAX_RETRIES } = require(${JSON.stringify(PACKAGE)});`,
          `const client = new Forgebench({ baseUrl: "http://127.0.0.1:1", apiKey: "fb_agt_" + "3".repeat(64) });`,
          `process.stdout.write(JSON.stringify({`,
          `  module: typeof module, agents: typeof client.agents.getTask,`,
          `  manage: [client.members.list, client.audit.iter, client.agents.events].map((f) => typeof f),`,
          `  error: typeof ForgebenchError, retries: DEFAULT_MAX_RETRIES,`,
          `}));`,
        ].join("\n"),
      );
      const output = execFileSync(process.execPath, [script], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
      assert.deepEqual(JSON.parse(output), {
        module: "object",
        agents: "function",
        manage: ["function", "function", "function"],
        error: "function",
        retries: 2,
      });
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});

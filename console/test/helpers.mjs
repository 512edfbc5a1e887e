// Plain-fetch setup of a tenant (with the operator key) and a Chromium driven by playwright-core.
import { execFile, spawn } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { promisify } from "node:util";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const URL_BASE = (process.env.FORGEBENCH_URL || "").replace(/\/$/, "");
export const OPERATOR_KEY = process.env.FORGEBENCH_OPERATOR_KEY || "";
export const CONSOLE = `${URL_BASE}/console`;
/** Where each page's screenshot goes: console/test/screenshots, or FORGEBENCH_CONSOLE_SHOTS
 * (`FORGEBENCH_CONSOLE_SHOTS=$PWD/docs/console console/test.sh` refreshes docs/console.md's). */
export const SHOTS =
  process.env.FORGEBENCH_CONSOLE_SHOTS || path.join(path.dirname(fileURLToPath(import.meta.url)), "screenshots");

export async function call(key, method, p, body, headers = {}) {
  const res = await fetch(URL_BASE + p, {
    method,
    headers: {
      ...(key ? { Authorization: `Bearer ${key}` } : {}),
      ...(body !== undefined ? { "Content-Type": "application/json" } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  return { status: res.status, json, headers: res.headers };
}

export async function ok(key, method, p, body, headers) {
  const r = await call(key, method, p, body, headers);
  if (r.status < 200 || r.status > 299) throw new Error(`${method} ${p} -> ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
}

const run = promisify(execFile);

const suffix = () => Math.random().toString(16).slice(2, 10);

/**
 * A fresh tenant: billing-orchestrator -> invoice-classifier -> refund-approver -> ledger-writer
 * (approved bindings, a key each), a member who owns member-bot with a pending binding
 * member-bot -> invoice-classifier, and a viewer.
 */
export async function createTenant() {
  const tenant = await ok(OPERATOR_KEY, "POST", "/v1/tenants", { name: `console-${suffix()}` });
  const admin = tenant.admin_key;
  const names = ["billing-orchestrator", "invoice-classifier", "refund-approver", "ledger-writer"];
  const agents = {};
  for (const n of names) agents[n] = await ok(admin, "POST", "/v1/agents", { name: n });
  await ok(admin, "POST", "/v1/agents/billing-orchestrator/agents", { callees: ["invoice-classifier"] });
  await ok(admin, "POST", "/v1/agents/invoice-classifier/agents", { callees: ["refund-approver"] });
  await ok(admin, "POST", "/v1/agents/refund-approver/agents", { callees: ["ledger-writer"] });
  const keys = {};
  for (const n of names) keys[n] = (await ok(admin, "POST", `/v1/agents/${n}/keys`)).key;
  const member = await ok(admin, "POST", "/v1/members", { name: "Mia Member", role: "member" });
  const viewer = await ok(admin, "POST", "/v1/members", { name: "Vic Viewer", role: "viewer" });
  agents["member-bot"] = await ok(member.key, "POST", "/v1/agents", { name: "member-bot" });
  const pending = await ok(member.key, "POST", "/v1/agents/member-bot/agents", { callees: ["invoice-classifier"] });
  return { tenant_id: tenant.tenant_id, admin, agents, keys, memberKey: member.key, viewerKey: viewer.key, pending: pending[0] };
}

/** The `forgebench` CLI, on the Rust SDK: built with the workspace (target/debug), or FORGEBENCH_CLI. */
export const CLI =
  process.env.FORGEBENCH_CLI ||
  path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "target", "debug", "forgebench");

/**
 * Opens a task as an agent developer would, through an SDK: the CLI's `call` with `--wait 0`,
 * which exits 6 while the task is still open and prints the Task as JSON.
 */
export async function openTaskWithSdk(callerKey, callee, text) {
  const env = { ...process.env, FORGEBENCH_URL: URL_BASE, FORGEBENCH_API_KEY: callerKey };
  try {
    const { stdout } = await run(CLI, ["--json", "call", callee, "--text", text, "--wait", "0"], { env });
    return JSON.parse(stdout);
  } catch (error) {
    if (error.code === 6) return JSON.parse(error.stdout);
    throw new Error(`${CLI} call -> ${error.code}: ${error.stderr || error.message}`);
  }
}

export async function openTask(callerKey, callee, text, headers = {}) {
  return ok(callerKey, "POST", `/v1/agents/${callee}/tasks?wait=0`, { message: { role: "user", parts: [{ text }] } }, headers);
}

export async function claim(key, seconds = 15) {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    const r = await call(key, "GET", "/v1/agents/me/tasks/next?wait=5");
    if (r.status === 200) return r.json;
    if (r.status !== 204) throw new Error(`claim -> ${r.status} ${JSON.stringify(r.json)}`);
  }
  throw new Error("no task to claim");
}

/**
 * A made-up host name the browser resolves to the gateway's host: the console at
 * http://console.test:PORT is the same gateway on an origin the browser does not trust (not
 * localhost, not a loopback address), as a plain-http deployment would be.
 */
export const UNTRUSTED_HOST = "console.test";

/** The console on UNTRUSTED_HOST, over the gateway's own scheme and port. */
export function untrustedConsole() {
  const u = new URL(CONSOLE);
  u.hostname = UNTRUSTED_HOST;
  return u.toString();
}

export async function launch() {
  // playwright-core gives every launch a fresh, temporary user-data dir of its own (it
  // refuses --user-data-dir) and removes it on close.
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
      `--host-resolver-rules=MAP ${UNTRUSTED_HOST} ${new URL(URL_BASE).hostname}`,
    ],
  });
  await mkdir(SHOTS, { recursive: true });
  return {
    browser,
    async close() {
      await browser.close();
    },
  };
}

/** A new page that records CSP violations and console errors. */
export async function newPage(browser, viewport = { width: 1280, height: 900 }) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.problems = [];
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) page.problems.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => page.problems.push(`pageerror: ${e.message}`));
  await context.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      (window.__csp = window.__csp || []).push(`${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  return { context, page };
}

export async function cspViolations(page) {
  const inPage = await page.evaluate(() => window.__csp || []).catch(() => []);
  return [...page.problems, ...inPage];
}

export async function signIn(page, key) {
  await page.goto(CONSOLE);
  await page.getByLabel("Member key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("#nav a").first().waitFor();
}

export async function shot(page, name) {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: false });
}

/**
 * A real OpenID Connect provider (oauth2-mock-server, tests/oidc-provider/provider.mjs, whose
 * packages console/test.sh installs): its discovery document, JWKS and client-credentials
 * tokens, whose subject is the client's id. `stop()` closes its stdin, which ends it.
 */
export async function startProvider() {
  const folder = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "tests", "oidc-provider");
  const child = spawn(process.execPath, ["provider.mjs"], { cwd: folder, stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const first = await new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error("the OIDC provider did not start within 30 s")), 30_000);
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`the OIDC provider exited (${code}) before it listened`)));
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const end = out.indexOf("\n");
      if (end >= 0) {
        clearTimeout(timer);
        resolve(out.slice(0, end));
      }
    });
  });
  const { issuer } = JSON.parse(first);
  return {
    issuer,
    /** An access token by the client-credentials grant: subject `clientId`, audience `audience`. */
    async token(clientId, audience) {
      const res = await fetch(`${issuer}/token`, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "client_credentials", client_id: clientId, aud: audience }),
      });
      if (res.status !== 200) throw new Error(`the provider's token endpoint answered ${res.status}`);
      return (await res.json()).access_token;
    },
    async stop() {
      child.stdin.end();
      const timer = setTimeout(() => child.kill(), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

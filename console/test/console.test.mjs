// End-to-end tests of the console in headless Chromium against a running gateway.
import { createServer } from "node:http";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  CONSOLE, call, claim, createTenant, cspViolations, launch, newPage, ok, openTask, openTaskWithSdk, shot, signIn,
  startProvider, untrustedConsole,
} from "./helpers.mjs";

let chrome;
let t; // the tenant

before(async () => {
  chrome = await launch();
  t = await createTenant();
});

after(async () => {
  if (chrome) await chrome.close();
});

/** Runs `fn` with a fresh page; fails on any CSP violation or page error. */
async function withPage(fn, viewport) {
  const { context, page } = await newPage(chrome.browser, viewport);
  try {
    await fn(page, context);
    assert.deepEqual(await cspViolations(page), [], "no CSP violation and no page error");
  } finally {
    await context.close();
  }
}

/** A push endpoint on this machine that answers every delivery with `status` and `body`. */
async function endpointServer(status, body) {
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      response.writeHead(status, { "Content-Type": "application/json" });
      response.end(JSON.stringify(body));
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}/a2a`, close: () => server.close() };
}

/** `fn()` again until it gives something truthy, or a failure after `ms` naming `what`. */
async function eventually(fn, what, ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`not within ${ms / 1000} s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The text of the fact `label` (a dt) in `scope`'s first list of facts. */
async function fact(scope, label) {
  return scope.locator("dl.facts dt", { hasText: new RegExp(`^${label}$`) }).locator("xpath=following-sibling::dd[1]").textContent();
}

/** The POST answer to the request whose path ends with `suffix`, made by `action`. */
async function answerTo(page, suffix, action) {
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === "POST" && new URL(r.url()).pathname.endsWith(suffix)),
    action(),
  ]);
  return response;
}

/** The buttons of the page that change a push endpoint's deliveries. */
const DELIVERY_CONTROLS = /^(Enable endpoint|Redrive|Redrive the next ones|Replay delivery)$/;

describe("console", () => {
  test("the page carries a strict CSP, its assets resolve under /console, and Tab reaches the navigation", async () => {
    await withPage(async (page) => {
      const assets = [];
      page.on("response", (r) => assets.push([new URL(r.url()).pathname, r.status()]));
      const res = await page.goto(CONSOLE);
      const csp = res.headers()["content-security-policy"] || "";
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /script-src 'self'/);
      assert.match(csp, /frame-ancestors 'none'/);
      await page.getByLabel("Member key").waitFor();
      const base = new URL(CONSOLE).pathname.replace(/\/console$/, "");
      for (const name of ["app.js", "api.js", "dom.js", "pages.js", "app.css"]) {
        assert.ok(assets.some(([p, s]) => p === `${base}/console/${name}` && s === 200), `${name} loaded from ${base}/console/`);
      }
      await signIn(page, t.admin);
      await page.reload();
      await page.locator("#nav a").first().waitFor();
      await page.getByRole("heading", { name: "Agents", level: 1 }).waitFor();
      await page.keyboard.press("Tab");
      assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Skip to content");
      await page.keyboard.press("Tab");
      assert.equal(await page.evaluate(() => document.activeElement?.closest("nav")?.id), "nav");
      assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Agents");
      await page.keyboard.press("Tab");
      await page.keyboard.press("Enter");
      await page.getByRole("heading", { name: "Bindings", level: 1 }).waitFor();
      assert.match(page.url(), /#\/bindings$/);
    });
  });

  test("a wrong key, an agent key and the operator key get a clear refusal and no data", async () => {
    await withPage(async (page) => {
      for (const key of ["fb_adm_" + "0".repeat(64), t.keys["billing-orchestrator"], process.env.FORGEBENCH_OPERATOR_KEY]) {
        await page.goto(CONSOLE);
        await page.getByLabel("Member key").fill(key);
        await page.getByRole("button", { name: "Sign in" }).click();
        await page.getByText("That key was not accepted").waitFor();
        assert.equal(await page.locator("#nav").isHidden(), true);
        assert.equal(await page.getByLabel("Member key").inputValue(), "", "the key is not left in the field");
      }
      await shot(page, "sign-in");
    });
  });

  test("an admin signs in and sees the agents; the key is nowhere in the page's storage", async () => {
    await withPage(async (page, context) => {
      await signIn(page, t.admin);
      await page.getByRole("heading", { name: "Agents", level: 1 }).waitFor();
      for (const n of ["billing-orchestrator", "invoice-classifier", "refund-approver", "ledger-writer", "member-bot"]) {
        await page.getByRole("link", { name: n, exact: true }).first().waitFor();
      }
      const stored = await page.evaluate(() => JSON.stringify([{ ...localStorage }, { ...sessionStorage }, document.cookie]));
      assert.ok(!stored.includes(t.admin), "the key is not in web storage or readable cookies");
      assert.ok(!stored.includes("fb_adm_"), "no key at all");
      assert.equal(await page.evaluate(() => document.cookie), "", "the session cookie is HttpOnly");
      const cookies = await context.cookies();
      const session = cookies.find((c) => c.name === "__Host-forgebench_session");
      assert.ok(session, "a session cookie");
      assert.equal(session.httpOnly, true);
      assert.equal(session.secure, true);
      assert.equal(session.sameSite, "Strict");
      assert.ok(!JSON.stringify(cookies).includes(t.admin));
      await shot(page, "agents");
    });
  });

  test("a pending binding approved through the UI is approved in the API; a grant from the UI appears", async () => {
    await withPage(async (page) => {
      await signIn(page, t.admin);
      await page.goto(CONSOLE + "#/bindings");
      const pendingRow = page.locator(`tr[data-binding="${t.pending.id}"]`);
      await pendingRow.waitFor();
      assert.equal(await pendingRow.getAttribute("data-state"), "pending");
      // Pending approvals come first.
      const firstState = await page.locator("tr[data-binding]").first().getAttribute("data-state");
      assert.equal(firstState, "pending");
      await shot(page, "bindings");
      await pendingRow.getByRole("button", { name: /^Approve/ }).click();
      await page.locator(`tr[data-binding="${t.pending.id}"][data-state="approved"]`).waitFor();
      const list = await ok(t.admin, "GET", "/v1/agents/member-bot/agents");
      const b = list.outbound.find((x) => x.id === t.pending.id);
      assert.ok(b.approved_at, "approved in the API");

      // Grant ledger-writer -> billing-orchestrator from the form.
      await page.getByLabel("Caller").selectOption("ledger-writer");
      await page.getByLabel("Callees").fill("billing-orchestrator");
      await page.getByRole("button", { name: "Grant", exact: true }).click();
      await page.waitForFunction(() => document.querySelectorAll("tr[data-binding]").length >= 5);
      const granted = await ok(t.admin, "GET", "/v1/agents/ledger-writer/agents");
      assert.ok(granted.outbound.some((x) => x.callee_agent_id === t.agents["billing-orchestrator"].id && x.approved_at));
    });
  });

  test("a task's page follows it live: submitted, input required, working, completed", async () => {
    await withPage(async (page) => {
      const caller = t.keys["billing-orchestrator"];
      const callee = t.keys["invoice-classifier"];
      // The caller opens it through an SDK (the CLI on the Rust SDK), as agent developers do.
      const task = await openTaskWithSdk(caller, "invoice-classifier", "Classify invoice INV-2026-0912, please.");
      assert.equal(task.status.state, "submitted");
      await signIn(page, t.admin);
      await page.goto(`${CONSOLE}#/tasks/invoice-classifier/${task.id}`);
      const state = page.locator("#status-title .badge");
      await page.getByText("Classify invoice INV-2026-0912").first().waitFor();
      assert.equal(await state.textContent(), "submitted");
      await page.evaluate(() => {
        window.__same_page = true;
      });
      await page.locator('.live[data-live="on"]').waitFor();

      await claim(callee);
      await page.locator("#status-title .badge", { hasText: "working" }).waitFor();
      await ok(callee, "POST", `/v1/agents/me/tasks/${task.id}/result`, {
        state: "input_required",
        message: { role: "agent", parts: [{ text: "Which currency is it in?" }] },
      });
      await page.locator("#status-title .badge", { hasText: "input required" }).waitFor();
      await page.getByText("Which currency is it in?").first().waitFor();
      await shot(page, "task-input-required");
      await ok(caller, "POST", `/v1/agents/invoice-classifier/tasks/${task.id}/messages`, {
        message: { role: "user", parts: [{ text: "EUR" }] },
      });
      await claim(callee);
      await ok(callee, "POST", `/v1/agents/me/tasks/${task.id}/result`, {
        state: "completed",
        artifacts: [{ name: "classification", parts: [{ text: "category: utilities" }, { data: { total: 4182, currency: "EUR" } }] }],
      });
      await page.locator("#status-title .badge", { hasText: "completed" }).waitFor();
      await page.getByRole("heading", { name: "classification" }).waitFor();
      assert.ok((await page.locator(".part-data pre, .part-data .long").first().textContent()).includes('"total": 4182'));
      assert.equal(await page.evaluate(() => window.__same_page), true, "no reload");
      await page.locator('.live[data-live="off"]').waitFor();
      await shot(page, "task");

      // The task search finds it by a word, and links to it.
      await page.goto(`${CONSOLE}#/tasks?q=0912`);
      await page.locator(`tr[data-task="${task.id}"]`).waitFor();
      await page.getByLabel("State").selectOption("completed");
      await page.getByRole("button", { name: "Search" }).click();
      await page.waitForFunction(() => location.hash.includes("state=completed"));
      await page.locator(`tr[data-task="${task.id}"]`).waitFor();
      await shot(page, "tasks");
    });
  });

  test("the call tree shows three levels, each node linking to its task, and a refused call under the call that made it", async () => {
    await withPage(async (page) => {
      const k = t.keys;
      const root = await openTask(k["billing-orchestrator"], "invoice-classifier", "root call");
      const child = await openTask(k["invoice-classifier"], "refund-approver", "child call", { "X-Parent-Call": root.call_id });
      const grandchild = await openTask(k["refund-approver"], "ledger-writer", "grandchild call", { "X-Parent-Call": child.call_id });
      assert.equal(grandchild.root_call_id, root.call_id);
      // A refusal: ledger-writer has no binding to refund-approver.
      const refused = await call(k["ledger-writer"], "POST", "/v1/agents/refund-approver/tasks", { message: { role: "user", parts: [{ text: "x" }] } }, { "X-Parent-Call": grandchild.call_id });
      assert.equal(refused.status, 403);

      await signIn(page, t.admin);
      await page.goto(`${CONSOLE}#/tasks/refund-approver/${child.id}`);
      await page.getByRole("link", { name: root.call_id }).click();
      await page.getByRole("heading", { name: /Call tree \(3 calls, 1 refused\)/ }).waitFor();
      const nested = page.locator(`li[data-call="${root.call_id}"] li[data-call="${child.call_id}"] li[data-call="${grandchild.call_id}"]`);
      await nested.waitFor();
      await nested.locator("li[data-refused]").getByText("no_binding").waitFor();
      await shot(page, "calls");
      await nested.getByRole("link", { name: `Task ${grandchild.id}` }).click();
      await page.getByRole("heading", { name: `Task ${grandchild.id}` }).waitFor();
      await page.getByText("grandchild call").first().waitFor();
    });
  });

  test("the audit log shows entries and filters them", async () => {
    await withPage(async (page) => {
      await signIn(page, t.admin);
      await page.goto(`${CONSOLE}#/audit`);
      await page.locator("tr[data-audit]").first().waitFor();
      await page.getByLabel("Action").fill("binding.approve");
      await page.getByRole("button", { name: "Search" }).click();
      await page.waitForFunction(() => location.hash.includes("action=binding.approve"));
      await page.locator('tr[data-action="binding.approve"]').first().waitFor();
      const others = await page.locator("tr[data-audit]:not([data-action='binding.approve'])").count();
      assert.equal(others, 0);
      // A person who acted is shown by name, not by member id.
      const actor = await page.locator('tr[data-action="binding.approve"] td:nth-child(2)').first().textContent();
      assert.match(actor, /^admin \S/);
      assert.doesNotMatch(actor, /[0-9a-f]{8}-[0-9a-f]{4}-/, "the actor is named, not an id");
      await shot(page, "audit");
    });
  });

  test("an agent key is issued once and revoked through the UI", async () => {
    await withPage(async (page) => {
      await signIn(page, t.admin);
      await page.goto(`${CONSOLE}#/agents/ledger-writer`);
      await page.getByRole("button", { name: "Issue a key" }).click();
      const key = await page.getByLabel("New key", { exact: true }).inputValue();
      assert.match(key, /^fb_agt_[0-9a-f]{64}$/);
      assert.equal((await call(key, "GET", "/v1/agents/me")).status, 200);
      await page.getByRole("button", { name: "Done, hide it" }).click();
      assert.equal(await page.getByLabel("New key", { exact: true }).count(), 0);
      assert.ok(!(await page.content()).includes(key), "the key is gone from the page");
      await shot(page, "agent");
      // Revoke every live key of ledger-writer (the setup's and the new one) from the list.
      await page.reload();
      const liveRows = page.locator("section[aria-labelledby=keys-title] tbody tr", { has: page.getByRole("button", { name: "Revoke" }) });
      await liveRows.first().waitFor();
      const count = await liveRows.count();
      assert.equal(count, 2);
      for (let i = 1; i <= count; i += 1) {
        await liveRows.first().getByRole("button", { name: "Revoke" }).click();
        await page.getByRole("button", { name: "Yes, revoke" }).click();
        await page.waitForFunction(
          (n) => [...document.querySelectorAll("section[aria-labelledby=keys-title] tbody tr")].filter((tr) => tr.querySelector("button")).length === n,
          count - i,
        );
      }
      const after = await ok(t.admin, "GET", "/v1/agents/ledger-writer/keys");
      assert.ok(after.items.every((x) => x.revoked_at), "every key revoked in the API");
      assert.equal((await call(key, "GET", "/v1/agents/me")).status, 401);
    });
  });

  test("an admin creates a viewer in the UI; the viewer finds no control that changes anything, and the API refuses its writes", async () => {
    let viewerKey;
    await withPage(async (page) => {
      await signIn(page, t.admin);
      await page.goto(`${CONSOLE}#/members`);
      await page.getByLabel("Name").fill("Rita Reviewer");
      await page.getByLabel("Role").selectOption("viewer");
      await page.getByRole("button", { name: "Create member" }).click();
      viewerKey = await page.getByLabel("New key", { exact: true }).inputValue();
      assert.match(viewerKey, /^fb_view_/);
      await page.getByRole("cell", { name: "Rita Reviewer", exact: true }).waitFor();
      await shot(page, "members");
    });
    await withPage(async (page) => {
      await signIn(page, viewerKey);
      const navs = await page.locator("#nav a").allTextContents();
      assert.ok(!navs.includes("Members"));
      const changing = /^(Pause|Resume|Retire|Approve|Revoke|Grant|Issue a key|Create agent|Create member|Save|Save limits|Trust issuer|Edit subjects|Remove|Edit limits and contract|Save limits and contract|Enable endpoint|Redrive|Redrive the next ones|Replay delivery)$/;
      for (const route of ["#/agents", "#/agents/invoice-classifier", "#/bindings", "#/audit", "#/settings", "#/tasks", "#/issuers"]) {
        await page.goto(CONSOLE + route);
        await page.locator("main h1").waitFor();
        await page.waitForFunction(() => !document.querySelector("main .loading"));
        assert.equal(await page.locator("main .page-error").count(), 0, `${route} is a page, not an error: ${await page.locator("#error").textContent()}`);
        const buttons = await page.locator("main button").allTextContents();
        const bad = buttons.filter((b) => changing.test(b.trim()));
        assert.deepEqual(bad, [], `no change control on ${route}`);
      }
      const session = await page.evaluate(async () => (await fetch("console/session")).json());
      assert.equal(session.role, "viewer");
      const status = await page.evaluate(async (csrf) => {
        const r = await fetch(`${location.pathname.replace(/\/console$/, "")}/v1/agents`, {
          method: "POST",
          credentials: "same-origin",
          headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
          body: JSON.stringify({ name: "viewer-made" }),
        });
        return r.status;
      }, session.csrf_token);
      assert.equal(status, 403, "the API refuses a viewer's write");
      const agents = await ok(t.admin, "GET", "/v1/agents");
      assert.ok(!agents.items.some((a) => a.name === "viewer-made"));
    });
  });

  test("an admin sets and clears the call-tree limits on the Settings page; each change is audited; a viewer only reads them", async () => {
    const w = await createTenant();
    const shown = (page) =>
      page.evaluate(() => [...document.querySelectorAll("section[aria-labelledby=limits-title] dd")].map((d) => d.textContent).join("|"));
    const cyclesLabel = "Refuse a call to an agent already on its path to the root";
    await withPage(async (page) => {
      await signIn(page, w.admin);
      await page.goto(`${CONSOLE}#/settings`);
      await page.getByRole("heading", { name: "Call-tree limits", level: 2 }).waitFor();
      // The page may be drawn again as the sign-in settles: wait for the shown limits, not
      // only the heading of the first drawing.
      await page.waitForFunction(() => document.querySelectorAll("section[aria-labelledby=limits-title] dd").length === 4);
      // The defaults: depth 16, cycles allowed, no count limit (an empty box).
      assert.equal(await shown(page), "16|allowed|no limit|no limit");
      assert.equal(await page.getByLabel("Most calls on one path").inputValue(), "16");
      assert.equal(await page.getByLabel("Most tasks one call opens").inputValue(), "");
      assert.equal(await page.getByLabel("Most open tasks in one tree").inputValue(), "");
      assert.equal(await page.getByLabel(cyclesLabel).isChecked(), false);

      await page.getByLabel("Most calls on one path").fill("4");
      await page.getByLabel("Most tasks one call opens").fill("25");
      await page.getByLabel(cyclesLabel).check();
      await page.getByRole("button", { name: "Save limits" }).click();
      await page.waitForFunction(() =>
        [...document.querySelectorAll("section[aria-labelledby=limits-title] dd")].map((d) => d.textContent).join("|") === "4|refused|25|no limit");
      assert.equal(await page.locator("#error").isHidden(), true, `no error: ${await page.locator("#error").textContent()}`);
      const set = await ok(w.admin, "GET", "/v1/tenant/settings");
      assert.deepEqual(set, { tenant_id: w.tenant_id, word_search: true, max_call_depth: 4, refuse_cycles: true, max_fan_out: 25, max_open_in_tree: null });
      assert.equal(await page.getByLabel("Most tasks one call opens").inputValue(), "25", "the form shows what was saved");
      await shot(page, "settings");

      // An emptied box clears its limit; a new one is set; what was not touched stays.
      await page.getByLabel("Most tasks one call opens").fill("");
      await page.getByLabel("Most open tasks in one tree").fill("300");
      await page.getByRole("button", { name: "Save limits" }).click();
      await page.waitForFunction(() =>
        [...document.querySelectorAll("section[aria-labelledby=limits-title] dd")].map((d) => d.textContent).join("|") === "4|refused|no limit|300");
      const cleared = await ok(w.admin, "GET", "/v1/tenant/settings");
      assert.deepEqual(cleared, { ...set, max_fan_out: null, max_open_in_tree: 300 });
      // Saving what is shown sends no change, and nothing is audited for it.
      const [unchanged] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === "PATCH" && new URL(r.url()).pathname.endsWith("/v1/tenant/settings")),
        page.getByRole("button", { name: "Save limits" }).click(),
      ]);
      assert.equal(unchanged.status(), 200);
      assert.deepEqual(unchanged.request().postDataJSON(), {}, "only what changed is sent");
      assert.deepEqual(await ok(w.admin, "GET", "/v1/tenant/settings"), cleared);

      // The audit log lists the two changes under their action, offered in the filter's list.
      await page.goto(`${CONSOLE}#/audit?action=tenant.call_tree`);
      await page.locator('tr[data-action="tenant.call_tree"]').first().waitFor();
      assert.equal(await page.locator("#audit-actions option[value='tenant.call_tree']").count(), 1);
      assert.equal(await page.locator('tr[data-action="tenant.call_tree"]').count(), 2);
      assert.equal(await page.locator("tr[data-audit]:not([data-action='tenant.call_tree'])").count(), 0);
      const audited = await ok(w.admin, "GET", "/v1/audit?action=tenant.call_tree");
      assert.equal(audited.items.length, 2, "two changes, two entries");
    });
    await withPage(async (page) => {
      await signIn(page, w.viewerKey);
      await page.goto(`${CONSOLE}#/settings`);
      await page.getByRole("heading", { name: "Call-tree limits", level: 2 }).waitFor();
      assert.equal(await shown(page), "4|refused|no limit|300", "a viewer sees the limits");
      // The one form a viewer gets asks whether a call would be allowed; it changes nothing.
      const controls = ":is(input, select, textarea):not(form[aria-label='Check a call'] *)";
      assert.equal(await page.locator(`main ${controls}`).count(), 0, "and no control to change them");
      assert.equal(await page.getByRole("button", { name: "Save limits" }).count(), 0);
    });
  });

  test("an admin tries a policy on the Settings page, checks a call, enforces it, and reads its refusal in the audit log; a viewer only reads and checks", async () => {
    const w = await createTenant();
    const text = 'forbid(principal, action == Action::"open", resource) when { resource.name == "invoice-classifier" && context has skill && context.skill == "refund" };';
    const policies = (page) => page.locator("section[aria-labelledby=policies-title]");
    const check = async (page) => {
      const form = page.getByRole("form", { name: "Check a call" });
      await form.getByLabel("Caller").selectOption("billing-orchestrator");
      await form.getByLabel("Callee").selectOption("invoice-classifier");
      await form.getByLabel("Skill").fill("refund");
      const [answer] = await Promise.all([
        page.waitForResponse((r) => new URL(r.url()).pathname.endsWith("/v1/tenant/policies/check")),
        form.getByRole("button", { name: "Check" }).click(),
      ]);
      assert.equal(answer.status(), 200);
      await page.locator(".verdict[data-allowed]").waitFor();
      return page.locator(".verdict").textContent();
    };
    await withPage(async (page) => {
      await signIn(page, w.admin);
      await page.goto(`${CONSOLE}#/settings`);
      await policies(page).getByText("No policies").waitFor();
      const form = page.getByRole("form", { name: "Save a policy" });
      // A policy off the schema is refused with the validator's words, and nothing is saved.
      await form.getByLabel("Name").fill("no-refunds");
      await form.getByLabel("Policy (Cedar, one forbid)").fill('forbid(principal, action, resource) when { context.skill == "refund" };');
      await form.getByRole("button", { name: "Save policy" }).click();
      await page.locator("#error:not([hidden])").waitFor();
      assert.match(await page.locator("#error").textContent(), /no-refunds/);
      assert.deepEqual((await ok(w.admin, "GET", "/v1/tenant/policies")).items, []);

      await form.getByLabel("Policy (Cedar, one forbid)").fill(text);
      await form.getByLabel("Description").fill("refunds go through a person");
      await form.getByRole("button", { name: "Save policy" }).click();
      await page.locator('[data-policy-name="no-refunds"]').waitFor();
      const saved = await ok(w.admin, "GET", "/v1/tenant/policies");
      assert.equal(saved.items[0].mode, "dry_run", "a new policy is tried first");
      assert.match(await check(page), /allowed.*would refuse it: no-refunds/s);

      // Tried, it refuses nothing: the open goes through and the audit log says would_refuse.
      const tried = await call(w.keys["billing-orchestrator"], "POST", "/v1/agents/invoice-classifier/tasks?wait=0",
        { message: { role: "user", parts: [{ text: "refund" }] }, skill: "refund" });
      assert.equal(tried.status, 200);

      await page.locator('[data-policy-name="no-refunds"]').getByRole("button", { name: "Enforce" }).click();
      await page.locator('[data-policy-name="no-refunds"]').getByRole("button", { name: "Try only (dry run)" }).waitFor();
      assert.match(await check(page), /refused.*policy no-refunds/s);
      const refused = await call(w.keys["billing-orchestrator"], "POST", "/v1/agents/invoice-classifier/tasks?wait=0",
        { message: { role: "user", parts: [{ text: "refund" }] }, skill: "refund" });
      assert.equal(refused.status, 403);

      await page.goto(`${CONSOLE}#/audit?action=task.open`);
      const refusal = page.locator('tr[data-action="task.open"]', { has: page.locator('[data-policy="no-refunds"]') });
      await refusal.first().waitFor();
      const outcomes = await refusal.evaluateAll((rows) => rows.map((r) => r.children[4].textContent.trim()).sort());
      assert.deepEqual(outcomes, ["refused", "would_refuse"]);
    });
    await withPage(async (page) => {
      await signIn(page, w.viewerKey);
      await page.goto(`${CONSOLE}#/settings`);
      await page.locator('[data-policy-name="no-refunds"]').waitFor();
      assert.equal(await page.getByRole("form", { name: "Save a policy" }).count(), 0);
      assert.equal(await policies(page).getByRole("button", { name: "Enforce" }).count(), 0);
      assert.equal(await policies(page).getByRole("button", { name: "Remove" }).count(), 0);
      assert.match(await check(page), /refused.*policy no-refunds/s);
    });
  });

  test("an admin sets and clears a binding's limits and contract on the Bindings page; its use shows; refusals read in the audit log; members and viewers only read them", async () => {
    const w = await createTenant();
    const { outbound } = await ok(w.admin, "GET", "/v1/agents/billing-orchestrator/agents");
    const binding = outbound.find((b) => b.callee_agent_id === w.agents["invoice-classifier"].id);
    // Every binding carries both objects, each field null while not set, and its use: nothing
    // is counted without a contract.
    assert.deepEqual(binding.limits, { max_call_depth: null, refuse_cycles: null, max_fan_out: null, max_open_in_tree: null });
    assert.deepEqual(binding.contract, { skills: null, rate_per_minute: null, max_concurrent: null, daily_quota: null });
    assert.deepEqual(binding.usage, { minute: null, day: null, open: null });
    const route = `${CONSOLE}#/bindings?agent=billing-orchestrator`;
    // The PATCH names the binding's caller, as revoking it does.
    const patchPath = `/v1/agents/billing-orchestrator/agents/${binding.id}`;
    const row = (page) => page.locator(`tr[data-binding="${binding.id}"]`);
    const editor = (page) => page.locator(`tr[data-editor-for="${binding.id}"] form`);
    // What the row shows: its limits, then its contract and use, each cell's values joined by |;
    // `until` waits for it to be `want` (or to start with it, `prefix`).
    const until = (page, want, prefix = false) =>
      page.waitForFunction(([id, want, prefix]) => {
        const tr = document.querySelector(`tr[data-binding="${id}"]`);
        if (!tr) return false;
        const values = (sel) => [...tr.querySelectorAll(`${sel} dd`)].map((d) => d.textContent).join("|");
        const text = `${values(".binding-limits")} ; ${values(".binding-contract")}`;
        return prefix ? text.startsWith(want) : text === want;
      }, [binding.id, want, prefix]);
    const shown = (page) =>
      page.evaluate((id) => {
        const tr = document.querySelector(`tr[data-binding="${id}"]`);
        const values = (sel) => [...tr.querySelectorAll(`${sel} dd`)].map((d) => d.textContent).join("|");
        return `${values(".binding-limits")} ; ${values(".binding-contract")}`;
      }, binding.id);
    const save = async (page) => {
      const [response] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === "PATCH" && new URL(r.url()).pathname.endsWith(patchPath)),
        editor(page).getByRole("button", { name: "Save limits and contract" }).click(),
      ]);
      return response;
    };
    const noError = async (page) => assert.equal(await page.locator("#error").isHidden(), true, `no error: ${await page.locator("#error").textContent()}`);
    const unset = "tenant's|tenant's|tenant's|tenant's";

    await withPage(async (page) => {
      await signIn(page, w.admin);
      await page.goto(route);
      await row(page).waitFor();
      assert.equal(await shown(page), `${unset} ; any|—|—|—`);

      // Set limits and a contract: one PATCH, each object holding only the fields set.
      await row(page).getByRole("button", { name: /^Edit limits and contract/ }).click();
      const form = editor(page);
      await form.waitFor();
      assert.equal(await form.getByLabel("Most calls on one path").inputValue(), "", "an unset limit is an empty box");
      assert.equal(await form.getByLabel("Calls back into their own path").inputValue(), "", "cycles: the tenant's");
      assert.equal(await form.getByLabel("Skills").inputValue(), "");
      await form.getByLabel("Most calls on one path").fill("3");
      await form.getByLabel("Calls back into their own path").selectOption({ label: "refused" });
      await form.getByLabel("Skills").fill("lookup, summarize");
      await form.getByLabel("Tasks a minute").fill("10");
      await form.getByLabel("Tasks a day (UTC)").fill("1000");
      await form.getByLabel("Open tasks at once").fill("2");
      const set = await save(page);
      assert.equal(set.status(), 200);
      assert.deepEqual(set.request().postDataJSON(), {
        limits: { max_call_depth: 3, refuse_cycles: true },
        contract: { skills: ["lookup", "summarize"], rate_per_minute: 10, daily_quota: 1000, max_concurrent: 2 },
      });
      const answered = await set.json();
      assert.equal(answered.id, binding.id, "the PATCH answers the binding");
      assert.deepEqual(answered.usage, { minute: 0, day: 0, open: 0 }, "counted from the contract on");
      await until(page, "3|refused|tenant's|tenant's ; lookup, summarize|0 / 10|0 / 1000|0 / 2");
      await noError(page);
      assert.equal(await editor(page).count(), 0, "the form closes with the save");
      const listed = (await ok(w.admin, "GET", "/v1/agents/billing-orchestrator/agents")).outbound.find((b) => b.id === binding.id);
      assert.deepEqual(listed.limits, { max_call_depth: 3, refuse_cycles: true, max_fan_out: null, max_open_in_tree: null });
      assert.deepEqual(listed.contract, { skills: ["lookup", "summarize"], rate_per_minute: 10, max_concurrent: 2, daily_quota: 1000 });

      // Use against the contract: two tasks open for "lookup"; a third is past max_concurrent
      // (429); an open naming no skill, or another, is the gate's 403.
      const caller = w.keys["billing-orchestrator"];
      const open = (text, skill) =>
        call(caller, "POST", "/v1/agents/invoice-classifier/tasks?wait=0", {
          message: { role: "user", parts: [{ text }] },
          ...(skill === undefined ? {} : { skill }),
        });
      const firstMinute = Math.floor(Date.now() / 60_000);
      const firstDay = Math.floor(Date.now() / 86_400_000);
      const opened = [await open("Look up INV-1.", "lookup"), await open("Look up INV-2.", "lookup")];
      for (const r of opened) assert.equal(r.status, 200, JSON.stringify(r.json));
      assert.equal(opened[0].json.skill, "lookup", "the task keeps its skill");
      const past = await open("Look up INV-3.", "lookup");
      assert.equal(past.status, 429);
      assert.equal(past.json?.detail?.code, "quota_exceeded");
      assert.equal(past.headers.get("retry-after"), "1");
      for (const skill of [undefined, "translate"]) {
        const refused = await open("Translate INV-1.", skill);
        assert.equal(refused.status, 403, `skill ${skill}`);
        assert.equal(refused.json?.detail?.code, "not_permitted");
      }
      await page.reload();
      await row(page).waitFor();
      const used = await shown(page);
      if (Math.floor(Date.now() / 60_000) === firstMinute) {
        assert.equal(used, "3|refused|tenant's|tenant's ; lookup, summarize|2 / 10|2 / 1000|2 / 2");
      } else {
        // A new UTC minute (or day) began meanwhile: its count started again.
        const day = Math.floor(Date.now() / 86_400_000) === firstDay ? "2" : "[0-2]";
        assert.match(used, new RegExp(`^3\\|refused\\|tenant's\\|tenant's ; lookup, summarize\\|[0-2] / 10\\|${day} / 1000\\|2 / 2$`));
      }
      await shot(page, "binding-contract");

      // Clear: an emptied box (and "the tenant's") is null; the fields not touched stay.
      await row(page).getByRole("button", { name: /^Edit limits and contract/ }).click();
      assert.equal(await editor(page).getByLabel("Skills").inputValue(), "lookup, summarize", "the form shows what is set");
      assert.equal(await editor(page).getByLabel("Tasks a minute").inputValue(), "10");
      await editor(page).getByLabel("Most calls on one path").fill("");
      await editor(page).getByLabel("Calls back into their own path").selectOption({ label: "the tenant's" });
      await editor(page).getByLabel("Skills").fill("");
      const cleared = await save(page);
      assert.equal(cleared.status(), 200);
      assert.deepEqual(cleared.request().postDataJSON(), { limits: { max_call_depth: null, refuse_cycles: null }, contract: { skills: null } });
      await until(page, `${unset} ; any|`, true);
      await noError(page);
      const after = (await ok(w.admin, "GET", "/v1/agents/billing-orchestrator/agents")).outbound.find((b) => b.id === binding.id);
      assert.deepEqual(after.limits, { max_call_depth: null, refuse_cycles: null, max_fan_out: null, max_open_in_tree: null });
      assert.deepEqual(after.contract, { skills: null, rate_per_minute: 10, max_concurrent: 2, daily_quota: 1000 });
      assert.equal(after.usage.open, 2, "the open tasks still count");

      // Saving what is shown sends an empty patch, which changes nothing.
      await row(page).getByRole("button", { name: /^Edit limits and contract/ }).click();
      const unchanged = await save(page);
      assert.equal(unchanged.status(), 200);
      assert.deepEqual(unchanged.request().postDataJSON(), {}, "only what changed is sent");
      await editor(page).waitFor({ state: "detached" });

      // A value the gateway refuses (65 skills; at most 64) is told on the error line, and the
      // form stays open with what was typed.
      await row(page).getByRole("button", { name: /^Edit limits and contract/ }).click();
      const tooMany = Array.from({ length: 65 }, (_, i) => `skill-${i}`).join(", ");
      await editor(page).getByLabel("Skills").fill(tooMany);
      const refusedSave = await save(page);
      assert.equal(refusedSave.status(), 400);
      await page.locator("#error").filter({ hasText: "HTTP 400" }).waitFor();
      assert.match(await page.locator("#error").textContent(), /invalid_request/);
      assert.equal(await editor(page).getByLabel("Skills").inputValue(), tooMany);
      await editor(page).getByRole("button", { name: "Cancel" }).click();
      assert.equal(await editor(page).count(), 0);
      assert.deepEqual((await ok(w.admin, "GET", "/v1/agents/billing-orchestrator/agents")).outbound.find((b) => b.id === binding.id).contract, after.contract, "unchanged");

      // The audit log: the two changes as binding.contract (offered in the filter's list), and
      // the refusals with their reasons in words.
      await page.goto(`${CONSOLE}#/audit?action=binding.contract`);
      await page.locator('tr[data-action="binding.contract"]').first().waitFor();
      assert.equal(await page.locator("#audit-actions option[value='binding.contract']").count(), 1);
      assert.equal(await page.locator('tr[data-action="binding.contract"]').count(), 2, "two changes, two entries; nothing for the empty patch or the refused one");
      assert.equal(await page.locator("tr[data-audit]:not([data-action='binding.contract'])").count(), 0);
      await page.goto(`${CONSOLE}#/audit?action=task.open&outcome=refused`);
      const skillRefusal = page.locator('tr[data-action="task.open"] [data-reason="skill_not_allowed"]').first();
      await skillRefusal.waitFor();
      assert.equal(await skillRefusal.locator(".reason-text").textContent(), "a skill the binding's contract does not allow");
      assert.equal(await skillRefusal.locator("code").textContent(), "skill_not_allowed");
      const quotaRefusal = page.locator('tr[data-action="task.open"] [data-reason="quota_exceeded"]').first();
      await quotaRefusal.waitFor();
      assert.equal(await quotaRefusal.locator(".reason-text").textContent(), "past the binding's rate, daily quota or open tasks at once");
      assert.equal(await quotaRefusal.locator("code").textContent(), "quota_exceeded");
      await shot(page, "audit-refusals");
    });
    const audited = await ok(w.admin, "GET", "/v1/audit?action=binding.contract");
    assert.equal(audited.items.length, 2);
    assert.ok(audited.items.every((e) => e.caller_agent_id === w.agents["billing-orchestrator"].id && e.callee_agent_id === w.agents["invoice-classifier"].id));

    // A member and a viewer read the same limits, contract and use, with no control to change
    // them; the API refuses their change.
    for (const key of [w.memberKey, w.viewerKey]) {
      await withPage(async (page) => {
        await signIn(page, key);
        await page.goto(route);
        await row(page).waitFor();
        const read = await shown(page);
        assert.match(read, /^tenant's\|tenant's\|tenant's\|tenant's ; any\|[0-2] \/ 10\|[0-2] \/ 1000\|2 \/ 2$/);
        assert.equal(await page.getByRole("button", { name: /Edit limits and contract/ }).count(), 0);
        assert.equal(await page.locator("tr.binding-editor, form.terms-form").count(), 0);
        assert.equal(await page.getByRole("button", { name: "Save limits and contract" }).count(), 0);
      });
      const refused = await call(key, "PATCH", patchPath, { contract: { rate_per_minute: 1 } });
      assert.equal(refused.status, 403);
      assert.equal(refused.json?.detail?.code, "forbidden");
    }
  });

  test("a change without the CSRF header is refused 403; with it, it passes", async () => {
    await withPage(async (page) => {
      await signIn(page, t.admin);
      const result = await page.evaluate(async () => {
        const base = location.pathname.replace(/\/console$/, "");
        const post = (headers) =>
          fetch(`${base}/v1/agents`, {
            method: "POST",
            credentials: "same-origin",
            headers: { "Content-Type": "application/json", ...headers },
            body: JSON.stringify({ name: "csrf-check" }),
          }).then((r) => r.status);
        const session = await (await fetch(`${base}/console/session`)).json();
        return [await post({}), await post({ "X-CSRF-Token": "wrong" }), await post({ "X-CSRF-Token": session.csrf_token })];
      });
      assert.deepEqual(result, [403, 403, 201]);
    });
  });

  test("sign-out ends the session: the API answers 401 to the cookie, and the page asks to sign in", async () => {
    await withPage(async (page, context) => {
      await signIn(page, t.admin);
      const cookie = (await context.cookies()).find((c) => c.name === "__Host-forgebench_session");
      const byCookie = () => call(null, "GET", "/v1/agents", undefined, { Cookie: `${cookie.name}=${cookie.value}` });
      assert.equal((await byCookie()).status, 200);
      assert.equal(await page.locator("#who").isVisible(), true, "the header says who is signed in");
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.getByText("You are signed out.").waitFor();
      assert.equal(await page.locator("#who").isVisible(), false, "the header no longer says who is signed in");
      assert.equal(await page.getByRole("button", { name: "Sign out" }).isVisible(), false, "nor offers Sign out");
      assert.equal((await byCookie()).status, 401);
      assert.equal((await call(null, "GET", "/console/session", undefined, { Cookie: `${cookie.name}=${cookie.value}` })).status, 401);
      await page.goto(`${CONSOLE}#/agents`);
      await page.getByLabel("Member key").waitFor();
    });
  });

  test("a session ended elsewhere gets a clear page and no data", async () => {
    await withPage(async (page) => {
      await signIn(page, t.admin);
      await page.getByRole("heading", { name: "Agents", level: 1 }).waitFor();
      // End the session behind the page's back (as its expiry would).
      await page.evaluate(async () => {
        const base = location.pathname.replace(/\/console$/, "");
        const s = await (await fetch(`${base}/console/session`)).json();
        await fetch(`${base}/console/session`, { method: "DELETE", headers: { "X-CSRF-Token": s.csrf_token } });
      });
      await page.goto(`${CONSOLE}#/audit`);
      await page.getByText(/session has ended|Sign in/).first().waitFor();
      await page.getByLabel("Member key").waitFor();
      assert.equal(await page.locator("tr[data-audit]").count(), 0);
      // Without a reload: navigate inside the page after the session is gone.
      await signIn(page, t.admin);
      await page.evaluate(async () => {
        const base = location.pathname.replace(/\/console$/, "");
        const s = await (await fetch(`${base}/console/session`)).json();
        await fetch(`${base}/console/session`, { method: "DELETE", headers: { "X-CSRF-Token": s.csrf_token } });
      });
      await page.evaluate(() => {
        location.hash = "#/bindings";
      });
      await page.getByText("Your session has ended").waitFor();
      assert.equal(await page.locator("tr[data-binding]").count(), 0);
      assert.equal(await page.locator("#who").isVisible(), false, "the header no longer says who is signed in");
    });
  });

  test("a task of another tenant is a clear 'not found' page with no data", async () => {
    const other = await createTenant();
    const task = await openTask(other.keys["billing-orchestrator"], "invoice-classifier", "other tenant's secret words");
    await withPage(async (page) => {
      await signIn(page, t.admin);
      await page.goto(`${CONSOLE}#/tasks/${other.agents["invoice-classifier"].id}/${task.id}`);
      await page.getByRole("heading", { name: "Not found" }).waitFor();
      assert.ok(!(await page.content()).includes("secret words"));
      await page.goto(`${CONSOLE}#/calls/${task.call_id}`);
      await page.getByText("No call of this tenant has this root.").waitFor();
    });
  });

  test("long names and a 1 MiB message do not widen the page, on a laptop and a phone", async () => {
    const longName = "x".repeat(63);
    await ok(t.admin, "POST", "/v1/agents", { name: longName });
    await ok(t.admin, "PATCH", `/v1/agents/${longName}`, { description: "D".repeat(300) });
    await ok(t.admin, "POST", "/v1/members", { name: "N".repeat(200), role: "viewer" });
    await ok(t.admin, "POST", "/v1/agents/billing-orchestrator/agents", { callees: [longName] });
    const part = "W".repeat(260000);
    const big = await ok(t.keys["billing-orchestrator"], "POST", `/v1/agents/${longName}/tasks?wait=0`, {
      message: { role: "user", parts: [{ text: part }, { text: part }, { text: part }, { text: part }] },
    });
    for (const viewport of [{ width: 1280, height: 900 }, { width: 375, height: 740 }]) {
      await withPage(async (page) => {
        await signIn(page, t.admin);
        const wide = () => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        for (const route of ["#/agents", `#/agents/${longName}`, "#/members", "#/bindings", "#/issuers", `#/tasks/${longName}/${big.id}`]) {
          await page.goto(CONSOLE + route);
          await page.locator("main h1").waitFor();
          await page.waitForFunction(() => !document.querySelector("main .loading"));
          assert.ok((await wide()) <= 0, `${route} at ${viewport.width}px: no sideways scroll`);
        }
        // Show a whole 260,000-character part: still no sideways scroll.
        const toggle = page.getByRole("button", { name: /Show all \(260,000 characters\)/ }).first();
        await toggle.click();
        await page.getByRole("button", { name: "Show less" }).first().waitFor();
        assert.ok((await wide()) <= 0, `expanded at ${viewport.width}px: no sideways scroll`);
        if (viewport.width < 500) {
          await page.evaluate(() => window.scrollTo(0, 0));
          await shot(page, "task-phone");
        }
      }, viewport);
    }
  });

  test("delivery attempts are offered for push tasks only: not on a pull task's page nor its row", async () => {
    // A callee on this machine that answers every delivery at once.
    const server = createServer((request, response) => {
      request.resume();
      request.on("end", () => {
        response.writeHead(200, { "Content-Type": "application/json" });
        response.end(JSON.stringify({ state: "completed", artifacts: [{ name: "response", parts: [{ text: "pushed" }] }] }));
      });
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      await ok(t.admin, "POST", "/v1/agents", { name: "push-callee" });
      await ok(t.admin, "POST", "/v1/agents/billing-orchestrator/agents", { callees: ["push-callee"] });
      await ok(t.admin, "PUT", "/v1/agents/push-callee/endpoint", { url: `http://127.0.0.1:${server.address().port}/a2a` });
      const pushed = await ok(t.keys["billing-orchestrator"], "POST", "/v1/agents/push-callee/tasks?wait=20", {
        message: { role: "user", parts: [{ text: "A pushed task." }] },
      });
      assert.equal(pushed.delivery, "push");
      assert.equal(pushed.status.state, "completed");
      const pulled = await openTask(t.keys["billing-orchestrator"], "invoice-classifier", "A pulled task has no delivery attempts.");
      assert.equal(pulled.delivery, "pull");
      await withPage(async (page) => {
        await signIn(page, t.admin);
        await page.goto(`${CONSOLE}#/tasks/push-callee/${pushed.id}`);
        await page.locator("section[aria-labelledby=task-attempts-title]").getByRole("cell", { name: "200", exact: true }).waitFor();

        await page.goto(`${CONSOLE}#/tasks/invoice-classifier/${pulled.id}`);
        await page.getByText("A pulled task has no delivery attempts.").first().waitFor();
        assert.equal(await page.getByRole("heading", { name: "Delivery attempts", exact: true }).count(), 0, "no delivery attempts on a pull task's page");

        await page.goto(`${CONSOLE}#/agents/push-callee`);
        const pushRow = page.locator("tr", { has: page.locator(`a[href$="/${pushed.id}"]`) });
        await pushRow.getByRole("button", { name: "Show attempts" }).click();
        await page.getByRole("heading", { name: `Delivery attempts of task ${pushed.id}` }).waitFor();

        await page.goto(`${CONSOLE}#/agents/invoice-classifier`);
        const pullRow = page.locator("tr", { has: page.locator(`a[href$="/${pulled.id}"]`) });
        await pullRow.waitFor();
        assert.equal(await pullRow.getByRole("button", { name: "Show attempts" }).count(), 0, "no Show attempts on a pull task's row");
      });
    } finally {
      server.close();
    }
  });

  test("an agent's endpoint health shows a failing endpoint and its last error; an admin redrives and replays its deliveries in place, a finished task's replay is refused in place; viewers and members who do not own it get no control", async () => {
    const w = await createTenant();
    // Callees on this machine: one down (503 to every delivery), one that answers at once.
    const down = await endpointServer(503, { detail: "down for maintenance" });
    const steady = await endpointServer(200, { state: "completed", artifacts: [{ name: "response", parts: [{ text: "done" }] }] });
    try {
      for (const name of ["flaky-callee", "steady-callee"]) await ok(w.admin, "POST", "/v1/agents", { name });
      await ok(w.admin, "POST", "/v1/agents/billing-orchestrator/agents", { callees: ["flaky-callee", "steady-callee"] });
      await ok(w.admin, "PUT", "/v1/agents/flaky-callee/endpoint", { url: down.url });
      await ok(w.admin, "PUT", "/v1/agents/steady-callee/endpoint", { url: steady.url });
      const caller = w.keys["billing-orchestrator"];
      const finished = await ok(caller, "POST", "/v1/agents/steady-callee/tasks?wait=20", { message: { role: "user", parts: [{ text: "Delivered at once." }] } });
      assert.equal(finished.status.state, "completed");
      const waiting = await openTask(caller, "flaky-callee", "Deliver me once you are back.");
      assert.equal(waiting.delivery, "push");
      // Its first attempt fails at once; then the task waits for a retry (5 s, then 30 s).
      const health = await eventually(async () => {
        const h = await ok(w.admin, "GET", "/v1/agents/flaky-callee/endpoint/health");
        return h.state === "failing" && h.last_error ? h : null;
      }, "flaky-callee's endpoint failing");
      assert.match(health.last_error, /503/);
      assert.equal(health.success_rate, 0);
      assert.equal(health.disabled, null);
      await eventually(async () => (await ok(w.admin, "GET", `/v1/agents/flaky-callee/tasks/${waiting.id}/attempts`)).items.length > 0, "an attempt on the log");

      await withPage(async (page) => {
        await signIn(page, w.admin);
        // A pull agent has no endpoint: no health section.
        await page.goto(`${CONSOLE}#/agents/invoice-classifier`);
        await page.locator("section[aria-labelledby=keys-title]").waitFor();
        assert.equal(await page.getByRole("heading", { name: "Endpoint health" }).count(), 0, "no health for a pull agent");

        await page.goto(`${CONSOLE}#/agents/flaky-callee`);
        const sec = page.locator('section.endpoint-health[data-state="failing"]');
        await sec.waitFor();
        assert.equal(await sec.locator("#health-title .badge").textContent(), "failing");
        assert.match(await sec.locator(".health-banner.health-failing").textContent(), /^Failing: \d+ failures? in a row since .+ It is disabled after 20 in a row spanning at least 1 h\.$/);
        assert.equal(await fact(sec, "Last error"), health.last_error);
        assert.match(await fact(sec, "Success rate"), /^0% \(0 ok, \d+ failed since .+\)$/);
        assert.match(await fact(sec, "Failures in a row"), /^\d+, since \S/);
        assert.equal(await fact(sec, "Last success"), "—");
        assert.equal(await fact(sec, "Disabled after"), "20 failures in a row spanning at least 1 h");
        assert.equal(await sec.getByRole("button", { name: "Enable endpoint" }).count(), 0, "nothing to enable: it is not disabled");
        const row = page.locator("tr", { has: page.locator(`a[href$="/${waiting.id}"]`) });
        await row.getByRole("button", { name: `Replay delivery of task ${waiting.id}` }).waitFor();

        // Redrive since a minute before the task was opened, typed in the browser's local time
        // and sent as UTC.
        const typed = await page.evaluate((ms) => {
          const d = new Date(ms);
          const p = (n) => String(n).padStart(2, "0");
          return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
        }, Date.parse(waiting.created_at) - 60_000);
        await sec.getByLabel("Redrive since").fill(typed);
        const redriven = await answerTo(page, "/v1/agents/flaky-callee/endpoint/redrive", () => sec.getByRole("button", { name: "Redrive", exact: true }).click());
        assert.equal(redriven.status(), 200);
        const since = redriven.request().postDataJSON().since;
        assert.equal(since, new Date(Math.floor((Date.parse(waiting.created_at) - 60_000) / 60_000) * 60_000).toISOString(), "the typed minute, in UTC");
        const result = await redriven.json();
        assert.deepEqual(result, { redriven: 1, task_ids: [waiting.id], next_since: null });
        const told = sec.locator(".redrive-result");
        await told.waitFor();
        assert.equal(await told.getAttribute("data-redriven"), "1");
        assert.match(await told.textContent(), /^Redriven: 1 delivery of tasks opened since .+\.$/);
        assert.equal(await sec.locator(".redrive-out").getAttribute("aria-live"), "polite");
        await sec.evaluate((el) => el.scrollIntoView({ block: "start" }));
        await shot(page, "endpoint-health");

        // The redriven task is linked; on its page, a replay is told with its webhook id.
        await sec.getByRole("link", { name: waiting.id }).click();
        await page.getByRole("heading", { name: `Task ${waiting.id}` }).waitFor();
        const attempts = page.locator("section[aria-labelledby=task-attempts-title]");
        await attempts.getByRole("cell", { name: "503", exact: true }).first().waitFor();
        const replayed = await answerTo(page, `/tasks/${waiting.id}/replay`, () => attempts.getByRole("button", { name: /^Replay delivery/ }).click());
        assert.equal(replayed.status(), 202);
        const { webhook_id: webhookId, task_id: taskId } = await replayed.json();
        assert.equal(taskId, waiting.id);
        await attempts.locator('.replay-out[data-outcome="done"] .webhook-id', { hasText: webhookId }).waitFor();
        assert.equal(await page.locator("#error").isHidden(), true, `no error: ${await page.locator("#error").textContent()}`);

        // A finished task's delivery is not waiting: the gateway's 409 is told beside the button.
        await page.goto(`${CONSOLE}#/tasks/steady-callee/${finished.id}`);
        const done = page.locator("section[aria-labelledby=task-attempts-title]");
        await done.getByRole("cell", { name: "200", exact: true }).waitFor();
        const refused = await answerTo(page, `/tasks/${finished.id}/replay`, () => done.getByRole("button", { name: /^Replay delivery/ }).click());
        assert.equal(refused.status(), 409);
        const conflict = (await refused.json()).detail;
        assert.equal(conflict.code, "conflict");
        const inPlace = done.locator('.replay-out[data-outcome="refused"]');
        await inPlace.waitFor();
        const toldText = await inPlace.textContent();
        assert.ok(toldText.startsWith(`Not replayed: ${conflict.message} (HTTP 409, conflict)`), toldText);
        assert.match(conflict.message, /completed/);
        assert.equal(await page.locator("#error").isHidden(), true, "told in place, not on the error line");
        await shot(page, "task-replay-refused");

        // The audit filter offers the endpoint's disabling and enabling.
        await page.goto(`${CONSOLE}#/audit`);
        await page.locator("tr[data-audit]").first().waitFor();
        for (const action of ["agent.endpoint.disable", "agent.endpoint.enable"]) {
          assert.equal(await page.locator(`#audit-actions option[value='${action}']`).count(), 1, action);
        }
      });

      // A viewer, and a member who does not own the agent, read its health with no control.
      for (const [who, key] of [["viewer", w.viewerKey], ["member", w.memberKey]]) {
        await withPage(async (page) => {
          await signIn(page, key);
          await page.goto(`${CONSOLE}#/agents/flaky-callee`);
          const sec = page.locator("section.endpoint-health[data-state]");
          await sec.waitFor();
          await page.waitForFunction(() => !document.querySelector("main .loading"));
          assert.equal(await fact(sec, "Last error"), health.last_error, `${who} reads the last error`);
          const buttons = (await page.locator("main button").allTextContents()).filter((b) => DELIVERY_CONTROLS.test(b.trim()));
          assert.deepEqual(buttons, [], `no delivery control for a ${who}`);
          assert.equal(await page.getByLabel("Redrive since").count(), 0);
          if (who === "viewer") {
            await page.goto(`${CONSOLE}#/tasks/flaky-callee/${waiting.id}`);
            // Its attempts are the callee's owner's and admins' to read: the section says so.
            await page.locator("section[aria-labelledby=task-attempts-title] :is(table, .section-error)").first().waitFor();
            assert.equal(await page.getByRole("button", { name: /Replay delivery/ }).count(), 0, "no replay for a viewer");
          }
        });
        // The API refuses them anyway.
        assert.equal((await call(key, "POST", `/v1/agents/flaky-callee/tasks/${waiting.id}/replay`)).status, 403);
        assert.equal((await call(key, "POST", "/v1/agents/flaky-callee/endpoint/redrive", { since: waiting.created_at })).status, 403);
      }

      // The member redrives the deliveries of the agent it owns (there are none waiting).
      await ok(w.memberKey, "PUT", "/v1/agents/member-bot/endpoint", { url: steady.url });
      await withPage(async (page) => {
        await signIn(page, w.memberKey);
        await page.goto(`${CONSOLE}#/agents/member-bot`);
        const sec = page.locator('section.endpoint-health[data-state="active"]');
        await sec.waitFor();
        assert.match(await fact(sec, "Success rate"), /^no attempts since \S/);
        assert.equal(await sec.getByRole("button", { name: "Enable endpoint" }).count(), 0);
        const redriven = await answerTo(page, "/v1/agents/member-bot/endpoint/redrive", () => sec.getByRole("button", { name: "Redrive", exact: true }).click());
        assert.equal(redriven.status(), 200);
        await sec.locator('.redrive-result[data-redriven="0"]', { hasText: "none was waiting for a retry" }).waitFor();
      });
    } finally {
      down.close();
      steady.close();
    }
  });

  test("a disabled endpoint stands out on its agent's page; an admin's Enable endpoint asks the gateway and the section reloads; a viewer only reads it", async () => {
    // The gateway disables an endpoint after 20 failures in a row over an hour (its defaults
    // here): its answers for a disabled one are drawn from a real answer, every read until the
    // page asks to enable it (a page may read the health more than once as it renders; read
    // once each, a second read under load showed the real, active endpoint).
    const w = await createTenant();
    const steady = await endpointServer(200, { state: "completed" });
    const at = new Date(Date.now() - 5 * 60_000).toISOString();
    const reason = `20 failures in a row since ${new Date(Date.now() - 65 * 60_000).toISOString()}`;
    const disabledOnce = async (page) => {
      let enabling = false;
      page.on("request", (request) => {
        if (request.method() === "POST" && /\/endpoint\/enable$/.test(request.url())) enabling = true;
      });
      await page.route(/\/v1\/agents\/dormant-callee\/endpoint\/health$/, async (route) => {
        if (enabling) return route.continue();
        const response = await route.fetch();
        const real = await response.json();
        await route.fulfill({ response, json: { ...real, state: "disabled", consecutive_failures: 20, failing_since: at, last_error: "the endpoint answered HTTP 503", last_failure_at: at, disabled: { at, reason } } });
      });
      await page.route(/\/v1\/agents\/dormant-callee$/, async (route) => {
        if (enabling || route.request().method() !== "GET") return route.continue();
        const response = await route.fetch();
        const real = await response.json();
        await route.fulfill({ response, json: { ...real, endpoint: { ...real.endpoint, disabled: { at, reason } } } });
      });
    };
    try {
      await ok(w.admin, "POST", "/v1/agents", { name: "dormant-callee" });
      await ok(w.admin, "PUT", "/v1/agents/dormant-callee/endpoint", { url: steady.url });
      await withPage(async (page) => {
        await signIn(page, w.admin);
        await disabledOnce(page);
        await page.goto(`${CONSOLE}#/agents/dormant-callee`);
        const sec = page.locator("section.endpoint-health");
        await page.locator('section.endpoint-health[data-state="disabled"]').waitFor();
        assert.equal(await sec.locator("#health-title .badge-disabled").textContent(), "disabled");
        assert.match(await sec.locator(".health-banner.health-disabled").textContent(), /^Disabled .+: nothing is sent to it, and each delivery fails its task at once until an admin enables it\.$/);
        assert.match(await fact(sec, "Disabled"), new RegExp(`: ${reason}$`));
        assert.equal(await page.locator(".disabled-mark .badge-disabled").count(), 1, "the agent's delivery says disabled");
        await sec.getByText("redrives and replays are refused").waitFor();
        await sec.evaluate((el) => el.scrollIntoView({ block: "start" }));
        await shot(page, "endpoint-health-disabled");

        const enabled = await answerTo(page, "/v1/agents/dormant-callee/endpoint/enable", () => sec.getByRole("button", { name: "Enable endpoint" }).click());
        assert.equal(enabled.status(), 200);
        // The section reads the health again: the gateway's own (an endpoint with no attempt).
        await page.locator('section.endpoint-health[data-state="active"]').waitFor();
        assert.equal(await sec.getByRole("button", { name: "Enable endpoint" }).count(), 0);
        assert.equal(await sec.locator(".health-banner").count(), 0);
        assert.equal(await page.locator(".disabled-mark .badge").count(), 0, "nor does the agent's delivery");
        assert.equal(await page.evaluate(() => document.activeElement?.id), "health-title", "focus on the section, not lost");
        assert.equal(await page.locator("#error").isHidden(), true, `no error: ${await page.locator("#error").textContent()}`);
      });
      await withPage(async (page) => {
        await signIn(page, w.viewerKey);
        await disabledOnce(page);
        await page.goto(`${CONSOLE}#/agents/dormant-callee`);
        const sec = page.locator('section.endpoint-health[data-state="disabled"]');
        await sec.waitFor();
        await sec.locator(".health-banner.health-disabled").waitFor();
        assert.equal(await sec.getByRole("button", { name: "Enable endpoint" }).count(), 0, "no Enable for a viewer");
        assert.equal(await sec.getByText("redrives and replays are refused").count(), 0, "nor a word on what it may not do");
      });
      assert.equal((await call(w.viewerKey, "POST", "/v1/agents/dormant-callee/endpoint/enable")).status, 403);
      assert.equal((await call(w.memberKey, "POST", "/v1/agents/dormant-callee/endpoint/enable")).status, 403);
    } finally {
      steady.close();
    }
  });

  test("over plain http on a host the browser does not trust, the sign-in page says the console needs HTTPS and sends no key", async (ctx) => {
    if (new URL(CONSOLE).protocol !== "http:") {
      ctx.skip("the gateway is not on plain http");
      return;
    }
    await withPage(async (page) => {
      const sent = [];
      page.on("request", (r) => {
        if (r.method() === "POST") sent.push(r.url());
      });
      await page.goto(untrustedConsole());
      await page.getByLabel("Member key").waitFor();
      assert.equal(await page.evaluate(() => window.isSecureContext), false, "the browser does not trust this origin");
      const notice = await page.locator("main .notice").textContent();
      assert.match(notice, /needs HTTPS/, "the page says why signing in cannot work here");
      assert.equal(await page.getByRole("button", { name: "Sign in" }).isDisabled(), true, "no sign-in to try");
      assert.equal(await page.getByLabel("Member key").isDisabled(), true, "no key to type");
      assert.deepEqual(sent, [], "nothing sent");
      // The same gateway on a trusted origin (a loopback address) offers the sign-in as usual.
      await page.goto(CONSOLE);
      await page.getByLabel("Member key").waitFor();
      assert.equal(await page.getByRole("button", { name: "Sign in" }).isDisabled(), false);
      assert.doesNotMatch(await page.locator("main .notice").textContent(), /HTTPS/);
    });
  });

  test("a session cookie the browser did not keep is told as such, not as a session that ended", async () => {
    await withPage(async (page) => {
      // The gateway's answer to the sign-in without its Set-Cookie: what a browser that refuses
      // the cookie is left with.
      await page.route(/\/console\/session$/, async (route) => {
        const request = route.request();
        if (request.method() !== "POST") return route.continue();
        const res = await fetch(request.url(), { method: "POST", headers: { "Content-Type": "application/json" }, body: request.postData() });
        const headers = Object.fromEntries([...res.headers].filter(([k]) => !["set-cookie", "content-length", "content-encoding"].includes(k)));
        return route.fulfill({ status: res.status, headers, body: await res.text() });
      });
      await page.goto(CONSOLE);
      await page.getByLabel("Member key").fill(t.admin);
      await page.getByRole("button", { name: "Sign in" }).click();
      const notice = page.locator("main .notice").filter({ hasText: /\S/ });
      await notice.waitFor();
      assert.match(await notice.textContent(), /did not keep the session cookie/);
      assert.doesNotMatch(await notice.textContent(), /session has ended/);
      assert.equal(await page.locator("#nav").isHidden(), true);
      assert.equal(await page.locator("#who").isVisible(), false);
    });
  });

  test("a task's page on a cookie session keeps one event stream for over 30 s and shows what happens then", async () => {
    const w = await createTenant();
    const callee = w.keys["invoice-classifier"];
    const task = await openTask(w.keys["billing-orchestrator"], "invoice-classifier", "Follow this task for half a minute.");
    await withPage(async (page) => {
      await signIn(page, w.admin);
      const streams = [];
      page.on("request", (r) => {
        if (new URL(r.url()).pathname.endsWith(`/tasks/${task.id}/events`)) streams.push(r.url());
      });
      await page.goto(`${CONSOLE}#/tasks/invoice-classifier/${task.id}`);
      await page.locator('.live[data-live="on"]').waitFor();
      await page.waitForTimeout(1_000);
      const opened = streams.length;
      // Past the stream's re-checks of its reader (one per key-cache time, 10 s by default).
      await page.waitForTimeout(31_000);
      await claim(callee);
      await ok(callee, "POST", `/v1/agents/me/tasks/${task.id}/progress`, { message: { parts: [{ text: "Still reading, 30 s on." }] } });
      await page.locator("#status-title .badge", { hasText: "working" }).waitFor({ timeout: 10_000 });
      await page.getByText("Still reading, 30 s on.").first().waitFor({ timeout: 10_000 });
      // No stream was opened again while the page stood (before the fix: one every ~13 s).
      assert.equal(streams.length, opened, `never reconnected (${opened} then ${streams.length} requests)`);
      assert.equal(await page.locator("#status-title .live").textContent(), "live");
    });
  });

  test("the Tasks page lists the tenant's tasks after an agent's open was refused", async () => {
    const w = await createTenant();
    const opened = await openTask(w.keys["billing-orchestrator"], "invoice-classifier", "Listed after a refusal.");
    // ledger-writer has no binding to billing-orchestrator.
    const refused = await call(w.keys["ledger-writer"], "POST", "/v1/agents/billing-orchestrator/tasks", { message: { role: "user", parts: [{ text: "x" }] } });
    assert.equal(refused.status, 403);
    assert.equal(refused.json?.detail?.code, "not_permitted");
    await withPage(async (page) => {
      await signIn(page, w.admin);
      await page.goto(`${CONSOLE}#/tasks`);
      await page.locator(`tr[data-task="${opened.id}"], main .page-error`).first().waitFor();
      assert.equal(await page.locator("#error").isHidden(), true, `no error: ${await page.locator("#error").textContent()}`);
      assert.equal(await page.locator(`tr[data-task="${opened.id}"]`).count(), 1, "the tenant's task is listed");
    });
  });
  test("an admin trusts an OpenID Connect issuer through the page, edits its subjects and removes it; members and viewers only read", async () => {
    const w = await createTenant();
    const vic = (await ok(w.admin, "GET", "/v1/members")).items.find((m) => m.name === "Vic Viewer");
    const provider = await startProvider();
    const audience = `forgebench-console-${w.tenant_id}`;
    const changing = /^(Trust issuer|Edit subjects|Remove|Add a subject|Remove subject|Save subjects)$/;
    try {
      await withPage(async (page) => {
        await signIn(page, w.admin);
        await page.getByRole("link", { name: "Trusted issuers" }).click();
        await page.getByRole("heading", { name: "Trusted issuers", level: 1 }).waitFor();
        await page.getByText("This tenant trusts no issuer").waitFor();

        // A URL whose discovery document the gateway cannot read: trusted all the same, and the
        // page says so, with the gateway's reason, beside the issuer's card.
        const unreadable = `${provider.issuer}/no-such-issuer`;
        await page.getByLabel("Issuer URL").fill(unreadable);
        await page.getByLabel("Audience").fill(audience);
        await page.getByRole("button", { name: "Trust issuer" }).click();
        const notice = page.locator("main .discovery-notice");
        await notice.waitFor();
        assert.equal(await page.locator("#error").isHidden(), true, `no error: ${await page.locator("#error").textContent()}`);
        const [listed] = (await ok(w.admin, "GET", "/v1/issuers")).items;
        assert.equal(listed.issuer, unreadable, "the issuer is trusted");
        assert.equal(listed.discovery, undefined, "the list does not carry what reading found");
        assert.equal(await notice.getAttribute("data-issuer"), listed.id);
        assert.equal(await notice.getAttribute("role"), "status");
        const told = await notice.textContent();
        assert.ok(told.includes(unreadable), told);
        assert.match(told, /could not read its discovery document: \S/);
        const unreadCard = page.locator(`section[data-issuer="${listed.id}"]`);
        await unreadCard.getByRole("heading", { name: unreadable }).waitFor();
        await shot(page, "issuers-discovery-unread");
        // It is removed through its card; the notice goes with it.
        await unreadCard.getByRole("button", { name: "Remove", exact: true }).click();
        await unreadCard.getByRole("button", { name: "Yes, remove" }).click();
        await page.getByText("This tenant trusts no issuer").waitFor();
        assert.equal(await notice.count(), 0, "the notice is gone with the issuer");
        assert.deepEqual((await ok(w.admin, "GET", "/v1/issuers")).items, [], "nothing trusted");

        // The provider itself, with a subject that signs in as billing-orchestrator.
        await page.getByLabel("Issuer URL").fill(provider.issuer);
        await page.getByLabel("Audience").fill(audience);
        await page.getByRole("button", { name: "Add a subject" }).click();
        await page.getByLabel("Subject", { exact: true }).fill("wl-billing");
        await page.getByLabel("Signs in as").selectOption({ label: "billing-orchestrator" });
        await page.getByRole("button", { name: "Trust issuer" }).click();
        const card = page.locator("section[data-issuer]");
        await card.waitFor();
        assert.equal(await page.locator("#error").isHidden(), true, `no error: ${await page.locator("#error").textContent()}`);
        assert.equal(await page.locator("main .discovery-notice").count(), 0, "its discovery document was read: no notice");
        const [trusted] = (await ok(w.admin, "GET", "/v1/issuers")).items;
        assert.equal(trusted.issuer, provider.issuer);
        assert.equal(trusted.audience, audience);
        assert.deepEqual(trusted.subjects, [{ subject: "wl-billing", agent_id: w.agents["billing-orchestrator"].id }]);
        assert.equal(await card.getAttribute("data-issuer"), trusted.id);
        await card.getByRole("heading", { name: provider.issuer }).waitFor();
        await card.getByText(audience, { exact: true }).waitFor();
        await card.getByRole("link", { name: trusted.discovery_url }).waitFor();
        const row = card.locator("tbody tr", { hasText: "wl-billing" });
        await row.getByRole("link", { name: "billing-orchestrator" }).waitFor();
        await shot(page, "issuers");

        // Its token now acts as billing-orchestrator's key: the task it opens is audited with it.
        const billing = await provider.token("wl-billing", audience);
        const me = await call(billing, "GET", "/v1/agents/me");
        assert.equal(me.status, 200);
        assert.equal(me.json.name, "billing-orchestrator");
        const opened = await openTask(billing, "invoice-classifier", "Opened with a token from a trusted issuer.");

        // Edit: drop wl-billing, add wl-vic for the viewer.
        await card.getByRole("button", { name: "Edit subjects" }).click();
        await card.getByRole("button", { name: "Add a subject" }).click();
        await card.getByLabel("Subject", { exact: true }).last().fill("wl-vic");
        await card.getByLabel("Signs in as").last().selectOption({ label: "Vic Viewer (viewer)" });
        await card.getByRole("button", { name: "Remove subject 1" }).click();
        await card.getByRole("button", { name: "Save subjects" }).click();
        await card.locator("tbody tr", { hasText: "wl-vic" }).waitFor();
        assert.equal(await card.locator("tbody tr", { hasText: "wl-billing" }).count(), 0);
        await card.locator("tbody tr", { hasText: "wl-vic" }).getByText("Vic Viewer").waitFor();
        const [edited] = (await ok(w.admin, "GET", "/v1/issuers")).items;
        assert.deepEqual(edited.subjects, [{ subject: "wl-vic", member_id: vic.member_id }]);
        assert.equal((await call(billing, "GET", "/v1/agents/me")).status, 401, "a subject left out signs in no more");
        const vicToken = await provider.token("wl-vic", audience);
        assert.equal((await call(vicToken, "GET", "/v1/issuers")).status, 200, "the new subject signs in as the viewer");

        // A gateway refusal while editing is told as the others are: the same subject twice.
        await card.getByRole("button", { name: "Edit subjects" }).click();
        await card.getByRole("button", { name: "Add a subject" }).click();
        await card.getByLabel("Subject", { exact: true }).last().fill("wl-vic");
        await card.getByRole("button", { name: "Save subjects" }).click();
        await page.locator("#error").filter({ hasText: "HTTP 400" }).waitFor();
        assert.match(await page.locator("#error").textContent(), /twice|more than once|duplicate|already/i);
        await card.getByRole("button", { name: "Cancel" }).click();
        assert.deepEqual((await ok(w.admin, "GET", "/v1/issuers")).items[0].subjects, edited.subjects, "unchanged");

        // The audit log names the issuer and subject a token signed in with.
        await page.goto(`${CONSOLE}#/audit?action=task.open`);
        const audited = page.locator(`tr[data-action="task.open"]`, { has: page.locator(".signed-in-with") });
        await audited.first().waitFor();
        const how = await audited.first().locator(".signed-in-with").textContent();
        assert.equal(how.trim(), `signed in with ${provider.issuer} as wl-billing`);
        assert.ok(opened.id);
      });

      // A member and a viewer read the issuer, with no control that changes it.
      for (const key of [w.memberKey, w.viewerKey]) {
        await withPage(async (page) => {
          await signIn(page, key);
          await page.getByRole("link", { name: "Trusted issuers" }).click();
          const card = page.locator("section[data-issuer]");
          await card.locator("tbody tr", { hasText: "wl-vic" }).waitFor();
          await card.getByRole("heading", { name: provider.issuer }).waitFor();
          assert.equal(await page.getByRole("heading", { name: "Trust an issuer" }).count(), 0);
          const buttons = (await page.locator("main button").allTextContents()).filter((b) => changing.test(b.trim()));
          assert.deepEqual(buttons, [], "no control that changes the issuers");
        });
      }

      // Removed through the page: its tokens sign in no more.
      await withPage(async (page) => {
        await signIn(page, w.admin);
        await page.goto(`${CONSOLE}#/issuers`);
        const card = page.locator("section[data-issuer]");
        await card.getByRole("button", { name: "Remove", exact: true }).click();
        await card.getByRole("button", { name: "Yes, remove" }).click();
        await page.getByText("This tenant trusts no issuer").waitFor();
        assert.equal(await card.count(), 0);
        assert.deepEqual((await ok(w.admin, "GET", "/v1/issuers")).items, []);
        assert.equal((await call(await provider.token("wl-vic", audience), "GET", "/v1/issuers")).status, 401);
      });
    } finally {
      await provider.stop();
    }
  });
});

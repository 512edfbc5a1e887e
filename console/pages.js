// The console's pages. Each takes the route's context and returns the page's nodes; what a role
// may do is what the API allows: change controls are left out for viewers, and the API refuses
// anyway.
import { ApiError, api, eventsUrl, qs, seg } from "./api.js";
import { append, badge, button, clear, field, h, input, longText, select, table, when } from "./dom.js";

const TASK_STATES = ["submitted", "working", "input_required", "completed", "failed", "canceled"];
const FINAL = new Set(["completed", "failed", "canceled"]);
const AUDIT_ACTIONS = [
  "member.create.", "agent.create", "agent.update", "agent.status.", "agent.key.issue", "agent.key.revoke",
  "binding.grant", "binding.grant.pending", "binding.approve", "binding.revoke", "binding.contract", "agent.endpoint.set",
  "agent.endpoint.clear", "agent.tool.grant", "agent.tool.revoke", "task.open", "task.message", "task.claim",
  "task.progress", "task.result.", "task.cancel", "tenant.create", "member.key.issue", "member.key.revoke",
  "tenant.word_search.", "tenant.call_tree", "tenant.policy.", "task.read", "task.push_config.", "issuer.trust", "issuer.subjects", "issuer.distrust",
  "agent.endpoint.disable", "agent.endpoint.enable", "agent.endpoint.redrive", "task.delivery.replay",
];
/** Why the gate refused an open (an audit entry's `reason`), in words; the code is shown beside. */
const REFUSAL_REASONS = {
  unknown_callee: "no such callee",
  other_tenant: "the callee is another tenant's",
  no_binding: "no binding to the callee",
  binding_pending: "the binding waits for approval",
  binding_revoked: "the binding is revoked",
  callee_paused: "the callee is paused",
  callee_retired: "the callee is retired",
  depth_exceeded: "past the most calls on one path",
  cycle: "a call back into its own path",
  fan_out_exceeded: "past the most tasks one call opens",
  tree_open_limit: "past the most open tasks in one tree",
  skill_not_allowed: "a skill the binding's contract does not allow",
  quota_exceeded: "past the binding's rate, daily quota or open tasks at once",
  policy: "a tenant policy forbids it",
};

// --- shared pieces --------------------------------------------------------------------------

/** Runs an action from a control: disables it meanwhile, shows an API error on the error line. */
function act(app, control, fn) {
  return async (event) => {
    if (event) event.preventDefault();
    app.clearError();
    if (control) control.disabled = true;
    try {
      await fn();
    } catch (error) {
      app.showError(error);
    } finally {
      if (control) control.disabled = false;
    }
  };
}

/** A section that loads on its own; its failure is told inside it, not as the page's. */
function section(app, title, load, id) {
  const body = h("div", { class: "section-body" }, h("p", { class: "loading", text: "Loading…" }));
  const sec = h("section", { class: "card", "aria-labelledby": id }, h("h2", { id, text: title }), body);
  Promise.resolve()
    .then(load)
    .then((nodes) => {
      clear(body);
      body.append(...[nodes].flat().filter(Boolean));
    })
    .catch((error) => {
      clear(body);
      const msg =
        error instanceof ApiError && error.status === 403
          ? "Your role may not see this."
          : `Could not load: ${app.describe(error)}`;
      body.append(h("p", { class: "section-error", text: msg }));
    });
  return sec;
}

/** A button that asks again in place before doing something that cannot be undone. */
function confirmButton(label, question, onConfirm, cls = "danger") {
  const wrap = h("span", { class: "confirm" });
  const first = h("button", { type: "button", class: cls, text: label });
  first.addEventListener("click", () => {
    const yes = h("button", { type: "button", class: "danger", text: `Yes, ${label.toLowerCase()}` });
    const no = h("button", { type: "button", text: "Cancel" });
    yes.addEventListener("click", () => onConfirm(yes));
    no.addEventListener("click", () => {
      clear(wrap);
      wrap.append(first);
      first.focus();
    });
    clear(wrap);
    wrap.append(h("span", { class: "question", text: question }), " ", yes, " ", no);
    yes.focus();
  });
  wrap.append(first);
  return wrap;
}

/** A new key, shown once with a copy button; "Done" removes it from the page for good. */
function revealKey(container, key, what) {
  clear(container);
  const out = h("input", { type: "text", readonly: true, value: key, class: "secret", autocomplete: "off", spellcheck: "false" });
  const status = h("span", { class: "hint", role: "status" });
  const copy = button("Copy", async () => {
    try {
      await navigator.clipboard.writeText(key);
      status.textContent = "Copied.";
    } catch {
      out.select();
      status.textContent = "Selected: copy it with your keyboard.";
    }
  });
  const box = h(
    "div",
    { class: "new-key", role: "region", "aria-label": "Key shown once" },
    h("p", { class: "strong", text: `New key for ${what}. It is shown this once: copy it now.` }),
    field("New key", out),
    h("div", { class: "row" }, copy, " ", button("Done, hide it", () => { out.value = ""; clear(container); }), " ", status),
  );
  container.append(box);
  out.focus();
  out.select();
}

function agentLink(app, id) {
  const name = app.agentName(id);
  return h("a", { href: `#/agents/${seg(name)}`, class: "name" }, longText(name, 80));
}

function taskHref(app, calleeId, taskId) {
  return `#/tasks/${seg(app.agentName(calleeId))}/${seg(taskId)}`;
}

function firstText(message) {
  const parts = message?.parts || [];
  for (const p of parts) {
    if (typeof p.text === "string") return p.text;
    if (p.data !== undefined) return JSON.stringify(p.data);
    if (p.file) return `file ${p.file.name || p.file.mime || ""}`;
  }
  return "";
}

function clip(text, n) {
  const t = String(text ?? "");
  return t.length > n ? `${t.slice(0, n)}…` : t;
}

function stateBadge(state) {
  return badge(String(state).replace("_", " "), state);
}

/** An audit entry's reason: in words when it is one of the gate's, with its code, and the
 *  tenant policies that decided it when a policy did. */
function reasonOf(code, policy) {
  if (!code) return "—";
  const words = REFUSAL_REASONS[code];
  if (!words) return longText(code, 200);
  const policies = policy ? [" ", h("span", { class: "policy", "data-policy": policy }, "policy ", h("code", { text: policy }))] : null;
  return h("span", { class: "reason", "data-reason": code }, h("span", { class: "reason-text", text: words }), " ", h("code", { text: code }), policies);
}

function dl(pairs) {
  return h("dl", { class: "facts" }, pairs.filter(Boolean).map(([k, v]) => [h("dt", { text: k }), h("dd", null, v)]));
}

function filterForm(app, fields, onSubmit, submitLabel = "Search") {
  const form = h("form", { class: "filters" }, fields, h("div", { class: "field submit" }, h("button", { type: "submit", text: submitLabel })));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    onSubmit(new FormData(form));
  });
  return form;
}

function hashWith(path, data) {
  const params = {};
  for (const [k, v] of data.entries()) if (String(v).trim()) params[k] = String(v).trim();
  return `#/${path}${qs(params)}`;
}

function agentOptions(app, anyLabel) {
  const opts = app.agents.map((a) => [a.name, a.name]);
  return anyLabel ? [["", anyLabel], ...opts] : opts;
}

// --- agents --------------------------------------------------------------------------------

function statusControls(app, agent) {
  if (!app.canChange() || agent.status === "retired") return null;
  const set = (status) => async (control) => {
    app.clearError();
    control.disabled = true;
    try {
      await api("PATCH", `/v1/agents/${seg(agent.name)}`, { status });
      await app.loadAgents();
      app.reload();
    } catch (error) {
      app.showError(error);
      control.disabled = false;
    }
  };
  const toggle =
    agent.status === "active"
      ? h("button", { type: "button", text: "Pause", "aria-label": `Pause ${agent.name}` })
      : h("button", { type: "button", text: "Resume", "aria-label": `Resume ${agent.name}` });
  toggle.addEventListener("click", () => set(agent.status === "active" ? "paused" : "active")(toggle));
  const retire = confirmButton("Retire", `Retire ${clip(agent.name, 40)} for good? Its keys stop working.`, (b) => set("retired")(b));
  return h("span", { class: "controls" }, toggle, " ", retire);
}

async function agentsPage({ app }) {
  const agents = await app.loadAgents();
  const nodes = [h("h1", { text: "Agents" })];
  if (app.canChange()) {
    const name = input("name", "", { required: true, pattern: "[a-z0-9][a-z0-9\\-]{0,62}", maxlength: "63" });
    const submit = h("button", { type: "submit", text: "Create agent" });
    const form = h("form", { class: "inline-form" }, field("New agent name", name, "a-z, 0-9 and -"), h("div", { class: "field submit" }, submit));
    form.addEventListener("submit", act(app, submit, async () => {
      await api("POST", "/v1/agents", { name: name.value.trim() });
      await app.loadAgents();
      app.reload();
    }));
    nodes.push(form);
  }
  const rows = agents.map((a) => [
    agentLink(app, a.id),
    badge(a.status),
    a.endpoint ? (a.endpoint.disabled ? h("span", null, "push ", badge("disabled")) : "push") : "pull",
    a.description ? longText(a.description, 120) : "—",
    statusControls(app, a) || "—",
  ]);
  nodes.push(table("Agents", ["Name", "Status", "Delivery", "Description", "Actions"], rows, "No agents yet."));
  return nodes;
}

async function agentPage({ app, params }) {
  const ref = params[0];
  const agent = await api("GET", `/v1/agents/${seg(ref)}`);
  const name = agent.name;
  // Whether the endpoint is disabled, as the agent said it and then as its health says it.
  const disabledMark = h("span", { class: "disabled-mark" });
  const markDisabled = (disabled) => {
    clear(disabledMark);
    if (disabled) disabledMark.append(" · ", badge("disabled"));
  };
  markDisabled(agent.endpoint?.disabled);
  const speaks = app.speaksFor(agent);
  const delivery = agent.endpoint
    ? h(
        "span",
        null,
        "push to ",
        h("code", null, longText(agent.endpoint.url, 120)),
        agent.endpoint.auth
          ? ` · credential: ${agent.endpoint.auth.type}${agent.endpoint.auth.name ? ` (${agent.endpoint.auth.name})` : ""}, configured (never shown)`
          : " · no credential",
        agent.endpoint.allow_private_network ? " · private network allowed" : "",
        disabledMark,
      )
    : "pull (the agent claims its tasks)";
  const keyBox = h("div");
  const attemptsOut = h("div", { class: "attempts-out", "aria-live": "polite" });

  const showAttempts = async (taskId) => {
    clear(attemptsOut);
    attemptsOut.append(h("p", { class: "loading", text: "Loading…" }));
    try {
      const page = await api("GET", `/v1/agents/${seg(name)}/tasks/${seg(taskId)}/attempts`);
      clear(attemptsOut);
      attemptsOut.append(
        h("h3", { text: `Delivery attempts of task ${taskId}` }),
        speaks ? replayLine(app, name, taskId) : null,
        attemptsTable(page.items || []),
      );
    } catch (error) {
      clear(attemptsOut);
      attemptsOut.append(h("p", { class: "section-error", text: `Could not load: ${app.describe(error)}` }));
    }
  };

  const attemptInput = input("task_id", "", { required: true });
  const attemptForm = h("form", { class: "inline-form" }, field("Task id", attemptInput), h("div", { class: "field submit" }, h("button", { type: "submit", text: "Show attempts" })));
  attemptForm.addEventListener("submit", (e) => {
    e.preventDefault();
    if (attemptInput.value.trim()) showAttempts(attemptInput.value.trim());
  });

  return [
    h("p", { class: "crumbs" }, h("a", { href: "#/agents", text: "Agents" }), " / "),
    h("h1", { class: "name" }, longText(name, 80)),
    h("section", { class: "card", "aria-label": "Status" },
      dl([
        ["Status", badge(agent.status)],
        ["Id", h("code", { text: agent.id })],
        ["Description", agent.description ? longText(agent.description, 300) : "—"],
        ["Delivery", delivery],
        ["Claim timeout", agent.claim_timeout_seconds != null ? `${agent.claim_timeout_seconds} s` : "—"],
        ["Input modes", (agent.input_modes || []).join(", ") || "—"],
        ["Owner", agent.owner_member_id || "an admin"],
        ["Created", when(agent.created_at)],
        ["Updated", when(agent.updated_at)],
      ]),
      statusControls(app, agent),
      h("p", null, h("a", { href: `#/bindings${qs({ agent: name })}`, text: "Bindings of this agent" })),
    ),
    agent.endpoint ? endpointHealthSection(app, agent, (health) => markDisabled(health.disabled)) : null,
    section(app, "Tools", async () => {
      const page = await api("GET", `/v1/agents/${seg(name)}/tools`);
      return table("Tools", ["Tool", "Description", "Tags"], (page.items || []).map((t) => [
        h("code", { text: t.name }), longText(t.description, 200), (t.tags || []).join(", ") || "—",
      ]), "No tools.");
    }, "tools-title"),
    section(app, "Keys", async () => {
      const page = await api("GET", `/v1/agents/${seg(name)}/keys`);
      const rows = (page.items || []).map((k) => [
        h("code", { text: k.key_id }),
        when(k.created_at),
        when(k.last_used_at),
        k.revoked_at ? when(k.revoked_at) : "live",
        app.canChange() && !k.revoked_at
          ? confirmButton("Revoke", "Revoke this key? Requests with it fail at once.", async (b) => {
              app.clearError();
              b.disabled = true;
              try {
                await api("DELETE", `/v1/agents/${seg(name)}/keys/${seg(k.key_id)}`);
                app.reload();
              } catch (error) {
                app.showError(error);
                b.disabled = false;
              }
            })
          : "—",
      ]);
      const nodes = [table("Keys", ["Key id", "Created", "Last used", "Revoked", "Actions"], rows, "No keys.")];
      if (app.canChange() && agent.status !== "retired") {
        const issue = h("button", { type: "button", text: "Issue a key" });
        issue.addEventListener("click", act(app, issue, async () => {
          const created = await api("POST", `/v1/agents/${seg(name)}/keys`);
          revealKey(keyBox, created.key, name);
        }));
        nodes.push(h("p", null, issue), keyBox);
      }
      return nodes;
    }, "keys-title"),
    section(app, "Delivery attempts", async () => {
      const nodes = [h("p", { class: "hint", text: "Push delivery attempts of one of this agent's inbound tasks: choose a task." }), attemptForm];
      if (app.role() === "admin" || app.role() === "viewer") {
        try {
          const page = await api("GET", `/v1/tasks${qs({ agent: name, direction: "inbound", limit: 10 })}`);
          const rows = (page.items || []).map((t) => [
            h("a", { href: taskHref(app, t.callee_agent_id, t.id), text: clip(t.id, 40) }),
            stateBadge(t.status.state),
            t.delivery,
            when(t.created_at),
            // A pull task is claimed, never delivered: it has no attempts to show, nor a replay.
            t.delivery === "push" ? pushTaskControls(app, name, t.id, speaks, () => showAttempts(t.id)) : "—",
          ]);
          nodes.push(table("Recent inbound tasks", ["Task", "State", "Delivery", "Created", ""], rows, "No inbound tasks."));
        } catch {
          /* the form still works */
        }
      }
      nodes.push(attemptsOut);
      return nodes;
    }, "attempts-title"),
  ];
}

function attemptsTable(items) {
  return table("Delivery attempts", ["Attempt", "At", "HTTP status", "Latency", "Error"], items.map((a) => [
    String(a.attempt), when(a.at), a.status == null ? "—" : String(a.status), `${a.latency_ms} ms`, a.error ? longText(a.error, 200) : "—",
  ]), "No delivery attempts (a pull task has none).");
}

// --- operating deliveries ------------------------------------------------------------------

/** A span of seconds in words: "1 h", "90 min", "45 s". */
function duration(seconds) {
  const s = Number(seconds) || 0;
  if (s >= 3600 && s % 3600 === 0) return `${s / 3600} h`;
  if (s >= 60 && s % 60 === 0) return `${s / 60} min`;
  return `${s} s`;
}

/** A moment as a datetime-local input shows it: the browser's local time, to the minute. */
function localMinute(ms) {
  const d = new Date(ms);
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

/**
 * Runs a change whose answer is told in place (`out`, a live region) rather than on the error
 * line: `done(answer)` draws what it did, and a refusal is told there in the gateway's words.
 */
function inPlace(app, control, out, fn, done, refused) {
  return async (event) => {
    if (event) event.preventDefault();
    app.clearError();
    control.disabled = true;
    clear(out);
    delete out.dataset.outcome;
    try {
      const answer = await fn();
      out.dataset.outcome = "done";
      append(out, [done(answer)]);
    } catch (error) {
      out.dataset.outcome = "refused";
      out.append(h("span", { class: "section-error", text: `${refused}: ${app.describe(error)}` }));
    } finally {
      control.disabled = false;
    }
  };
}

/**
 * "Replay delivery" for one push task (its callee's owner or an admin): the button, and `out`
 * where what it did, or why the gateway refused it, is told.
 */
function replayControl(app, callee, taskId, onReplayed) {
  const out = h("span", { class: "replay-out", "aria-live": "polite" });
  const replay = h("button", { type: "button", class: "replay", text: "Replay delivery", "aria-label": `Replay delivery of task ${taskId}` });
  replay.addEventListener("click", inPlace(app, replay, out,
    () => api("POST", `/v1/agents/${seg(callee)}/tasks/${seg(taskId)}/replay`),
    (r) => {
      if (onReplayed) onReplayed(r);
      return h("span", { class: "replayed" }, "Replayed: attempted again now, webhook id ", h("code", { class: "webhook-id", text: r.webhook_id }), ".");
    },
    "Not replayed"));
  return { button: replay, out };
}

/** A line with "Replay delivery" and, beside it, what came of it. */
function replayLine(app, callee, taskId, onReplayed) {
  const { button: replay, out } = replayControl(app, callee, taskId, onReplayed);
  return h("p", { class: "row" }, replay, out);
}

/** A push task's row controls: its attempts, and its replay for whoever speaks for the callee
 *  (what came of it below the buttons, so that they stay side by side). */
function pushTaskControls(app, callee, taskId, speaks, onShow) {
  const show = button("Show attempts", onShow);
  if (!speaks) return show;
  const { button: replay, out } = replayControl(app, callee, taskId);
  return [h("span", { class: "controls" }, show, replay), h("div", null, out)];
}

/** An endpoint's health as facts: state, success rate, failures, last error and times. */
function healthFacts(health) {
  const a = health.attempts || {};
  const rate = health.success_rate === null || health.success_rate === undefined
    ? h("span", null, "no attempts since ", when(a.since))
    : h("span", null,
        h("strong", { class: "rate", text: health.success_rate.toLocaleString("en", { style: "percent", maximumFractionDigits: 1 }) }),
        ` (${Number(a.ok).toLocaleString("en")} ok, ${Number(a.failed).toLocaleString("en")} failed since `, when(a.since), ")");
  const rule = health.disable_after || {};
  return dl([
    ["State", badge(health.state)],
    ["URL", h("code", null, longText(health.url, 120))],
    ["Success rate", rate],
    ["Failures in a row", h("span", null, String(health.consecutive_failures ?? 0), health.failing_since ? [", since ", when(health.failing_since)] : null)],
    ["Last error", health.last_error ? longText(health.last_error, 300) : "—"],
    ["Last success", when(health.last_success_at)],
    ["Last failure", when(health.last_failure_at)],
    health.disabled ? ["Disabled", h("span", null, when(health.disabled.at), ": ", longText(health.disabled.reason, 300))] : null,
    ["Disabled after", `${rule.failures} failures in a row spanning at least ${duration(rule.seconds)}`],
  ]);
}

/** What a failing or disabled endpoint means, in a line that stands out; nothing when active. */
function healthBanner(health) {
  if (health.state === "disabled") {
    return h("p", { class: "health-banner health-disabled" },
      "Disabled ", when(health.disabled?.at), ": nothing is sent to it, and each delivery fails its task at once until an admin enables it.");
  }
  if (health.state === "failing") {
    const n = health.consecutive_failures;
    return h("p", { class: "health-banner health-failing" },
      `Failing: ${n} failure${n === 1 ? "" : "s"} in a row`, health.failing_since ? [" since ", when(health.failing_since)] : null,
      `. It is disabled after ${health.disable_after?.failures} in a row spanning at least ${duration(health.disable_after?.seconds)}.`);
  }
  return null;
}

/**
 * An agent's "Endpoint health" (GET …/endpoint/health, any person of the tenant): what it shows,
 * with Refresh; "Enable endpoint" for an admin while it is disabled (the section reloads after);
 * and "Redrive since" for the agent's owner or an admin. `onHealth` hears each health read.
 */
function endpointHealthSection(app, agent, onHealth) {
  const name = agent.name;
  const admin = app.role() === "admin";
  const speaks = app.speaksFor(agent);
  const titleMark = h("span", { class: "health-title-mark" });
  const body = h("div", { class: "section-body" }, h("p", { class: "loading", text: "Loading…" }));
  const sec = h("section", { class: "card endpoint-health", "aria-labelledby": "health-title" },
    h("h2", { id: "health-title" }, "Endpoint health ", titleMark), body);

  const load = async () => {
    let health;
    try {
      health = await api("GET", `/v1/agents/${seg(name)}/endpoint/health`);
    } catch (error) {
      clear(body);
      clear(titleMark);
      delete sec.dataset.state;
      const msg = error instanceof ApiError && error.status === 403 ? "Your role may not see this." : `Could not load: ${app.describe(error)}`;
      body.append(h("p", { class: "section-error", text: msg }));
      return;
    }
    sec.dataset.state = health.state;
    clear(titleMark);
    titleMark.append(badge(health.state));
    const controls = [button("Refresh", act(app, null, load))];
    if (admin && health.disabled) {
      const enable = h("button", { type: "button", class: "enable-endpoint", text: "Enable endpoint" });
      enable.addEventListener("click", act(app, enable, async () => {
        await api("POST", `/v1/agents/${seg(name)}/endpoint/enable`);
        await load();
        sec.querySelector("#health-title").focus();
      }));
      controls.unshift(enable);
    }
    clear(body);
    body.append(
      healthBanner(health) || "",
      healthFacts(health),
      speaks && health.disabled ? h("p", { class: "hint", text: "While it is disabled, redrives and replays are refused: an admin enables it first." }) : "",
      h("div", { class: "row" }, controls),
    );
    if (onHealth) onHealth(health);
  };
  sec.querySelector("#health-title").setAttribute("tabindex", "-1");
  load();
  if (speaks) sec.append(redriveForm(app, agent));
  return sec;
}

/**
 * "Redrive since": every delivery of the agent's tasks opened since then that waits for a retry,
 * attempted now (POST …/endpoint/redrive). The moment is typed in local time and sent as UTC;
 * what was redriven is told below, each task linked, with a button for the next page.
 */
function redriveForm(app, agent) {
  const since = h("input", { type: "datetime-local", name: "since", required: true, value: localMinute(Date.now() - 3_600_000) });
  const submit = h("button", { type: "submit", text: "Redrive" });
  const out = h("div", { class: "redrive-out", "aria-live": "polite" });
  const redrive = (sinceIso) => api("POST", `/v1/agents/${seg(agent.name)}/endpoint/redrive`, { since: sinceIso });
  const told = (sinceIso) => (r) => {
    const n = r.redriven;
    const nodes = [
      h("p", { class: "redrive-result", "data-redriven": String(n) },
        `Redriven: ${n} ${n === 1 ? "delivery" : "deliveries"} of tasks opened since `, when(sinceIso),
        n ? "." : " (none was waiting for a retry)."),
    ];
    if ((r.task_ids || []).length) {
      nodes.push(h("ul", { class: "task-ids", "aria-label": "Redriven tasks" },
        r.task_ids.map((id) => h("li", null, h("a", { href: taskHref(app, agent.id, id), text: id })))));
    }
    if (r.next_since) {
      const next = h("button", { type: "button", text: "Redrive the next ones" });
      next.addEventListener("click", inPlace(app, next, out, () => redrive(r.next_since), told(r.next_since), "Not redriven"));
      nodes.push(h("p", null, "More may be waiting. ", next));
    }
    return nodes;
  };
  const form = h("form", { class: "inline-form redrive-form", "aria-label": "Redrive deliveries" },
    field("Redrive since", since, "your local time, sent as UTC: tasks opened since then whose delivery waits for a retry are attempted now"),
    h("div", { class: "field submit" }, submit));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const ms = Date.parse(since.value); // a datetime-local value, without offset: local time
    if (Number.isNaN(ms)) return;
    const sinceIso = new Date(ms).toISOString();
    inPlace(app, submit, out, () => redrive(sinceIso), told(sinceIso), "Not redriven")();
  });
  return h("div", { class: "redrive" }, h("h3", { text: "Redrive deliveries" }), form, out);
}

// --- bindings ------------------------------------------------------------------------------

function bindingState(b) {
  if (b.revoked) return "revoked";
  return b.approved_at ? "approved" : "pending";
}

const NO_LIMITS = { max_call_depth: null, refuse_cycles: null, max_fan_out: null, max_open_in_tree: null };
const NO_CONTRACT = { skills: null, rate_per_minute: null, max_concurrent: null, daily_quota: null };
const NO_USAGE = { minute: null, day: null, open: null };

/** A binding's limits, contract and use, every field present (`null` when not set). */
function bindingTerms(b) {
  return {
    limits: { ...NO_LIMITS, ...(b.limits || {}) },
    contract: { ...NO_CONTRACT, ...(b.contract || {}) },
    usage: { ...NO_USAGE, ...(b.usage || {}) },
  };
}

/** A short list of terms: [label, value, data attribute name, its value, what it means]. */
function terms(rows) {
  return h("dl", { class: "terms" }, rows.map(([label, value, attr, key, title]) => [
    h("dt", { text: label, title }),
    h("dd", { [attr]: key }, value),
  ]));
}

/** A binding's call-tree limits as shown: each its value, or "tenant's" when it keeps the tenant's. */
function bindingLimitsShown(limits) {
  const own = (v) => (v === null || v === undefined ? "tenant's" : String(v));
  return terms([
    ["depth", own(limits.max_call_depth), "data-limit", "max_call_depth", "most calls on one path (the root call is 1)"],
    ["cycles", limits.refuse_cycles === null || limits.refuse_cycles === undefined ? "tenant's" : limits.refuse_cycles ? "refused" : "allowed",
      "data-limit", "refuse_cycles", "calls back into their own path"],
    ["fan-out", own(limits.max_fan_out), "data-limit", "max_fan_out", "most tasks one call opens"],
    ["open in tree", own(limits.max_open_in_tree), "data-limit", "max_open_in_tree", "most open tasks in one tree"],
  ]);
}

/** A binding's contract and its use against it: "3 / 10" (used / allowed), "—" when not set. */
function bindingContractShown(contract, usage) {
  const against = (used, limit) => (limit === null || limit === undefined ? "—" : `${used === null || used === undefined ? "—" : used} / ${limit}`);
  const skills = contract.skills === null || contract.skills === undefined ? "any" : longText(contract.skills.join(", ") || "none", 200);
  return terms([
    ["skills", skills, "data-contract", "skills", "the callee's skills the caller may name; any when the contract lists none"],
    ["minute", against(usage.minute, contract.rate_per_minute), "data-use", "minute", "tasks opened through the binding this UTC minute / its rate per minute"],
    ["today", against(usage.day, contract.daily_quota), "data-use", "day", "tasks opened through the binding this UTC day / its daily quota"],
    ["open", against(usage.open, contract.max_concurrent), "data-use", "open", "its open tasks / the most it may have open at once"],
  ]);
}

/**
 * An admin's form for a binding's limits and contract: an empty box is `null` (the tenant's
 * limit, or no term), and a save sends one PATCH of what changed, each object a merge patch.
 */
function bindingTermsForm(app, b, onCancel) {
  const { limits, contract } = bindingTerms(b);
  const caller = app.agentName(b.caller_agent_id);
  const callee = app.agentName(b.callee_agent_id);
  const number = (name, value, max, empty) =>
    input(name, value ?? "", { type: "number", min: "1", max: String(max), step: "1", inputmode: "numeric", placeholder: empty });
  const depth = number("max_call_depth", limits.max_call_depth, 64, "tenant's");
  const cycles = select("refuse_cycles", [["", "the tenant's"], ["true", "refused"], ["false", "allowed"]],
    limits.refuse_cycles === null ? "" : String(limits.refuse_cycles));
  const fanOut = number("max_fan_out", limits.max_fan_out, 10000, "tenant's");
  const openInTree = number("max_open_in_tree", limits.max_open_in_tree, 10000, "tenant's");
  const skills = input("skills", (contract.skills || []).join(", "), { placeholder: "any" });
  const rate = number("rate_per_minute", contract.rate_per_minute, 10000, "none");
  const quota = number("daily_quota", contract.daily_quota, 1000000, "none");
  const concurrent = number("max_concurrent", contract.max_concurrent, 10000, "none");
  const tools = h("p", { class: "hint tools-hint" });
  // The callee's tools are the skills a contract names: offered as a reminder, best effort.
  api("GET", `/v1/agents/${seg(callee)}/tools`)
    .then((page) => {
      const names = (page?.items || []).map((t) => t.name);
      tools.textContent = names.length ? `${callee}'s tools: ${names.join(", ")}` : `${callee} has no tools.`;
    })
    .catch(() => {});
  const submit = h("button", { type: "submit", text: "Save limits and contract" });
  const form = h("form", { class: "terms-form", "aria-label": `Limits and contract of ${clip(caller, 60)} calling ${clip(callee, 60)}` },
    h("fieldset", { class: "terms-set" }, h("legend", { text: "Limits (in place of the tenant's call-tree limits)" }),
      h("div", { class: "inline-form" },
        field("Most calls on one path", depth, "1–64; empty: the tenant's"),
        field("Calls back into their own path", cycles),
        field("Most tasks one call opens", fanOut, "1–10,000; empty: the tenant's"),
        field("Most open tasks in one tree", openInTree, "1–10,000; empty: the tenant's"))),
    h("fieldset", { class: "terms-set" }, h("legend", { text: "Contract (what the caller may do on the callee)" }),
      h("div", { class: "inline-form" },
        field("Skills", skills, "skill ids, separated by commas; empty: any"),
        field("Tasks a minute", rate, "1–10,000; empty: no rate"),
        field("Tasks a day (UTC)", quota, "1–1,000,000; empty: no quota"),
        field("Open tasks at once", concurrent, "1–10,000; empty: no limit")),
      tools),
    h("div", { class: "row" }, submit, button("Cancel", onCancel)));
  form.addEventListener("submit", act(app, submit, async () => {
    const count = (box) => (box.value.trim() === "" ? null : Number(box.value));
    const names = [...new Set(skills.value.split(/[\s,]+/).filter(Boolean))];
    const wanted = {
      limits: {
        max_call_depth: count(depth),
        refuse_cycles: cycles.value === "" ? null : cycles.value === "true",
        max_fan_out: count(fanOut),
        max_open_in_tree: count(openInTree),
      },
      contract: {
        skills: names.length ? names : null,
        rate_per_minute: count(rate),
        max_concurrent: count(concurrent),
        daily_quota: count(quota),
      },
    };
    // Only what changed, each object a merge patch: what another admin changed meanwhile stays.
    const was = { limits, contract };
    const patch = {};
    for (const [part, fields] of Object.entries(wanted)) {
      const changed = Object.entries(fields).filter(([k, v]) => JSON.stringify(v) !== JSON.stringify(was[part][k] ?? null));
      if (changed.length) patch[part] = Object.fromEntries(changed);
    }
    await api("PATCH", `/v1/agents/${seg(caller)}/agents/${seg(b.id)}`, patch);
    app.reload();
  }));
  return form;
}

async function bindingsPage({ app, query }) {
  await app.loadAgents();
  const chosen = query.get("agent") || "";
  const picker = select("agent", agentOptions(app, "All agents"), chosen);
  picker.addEventListener("change", () => app.go(`#/bindings${qs({ agent: picker.value })}`));
  const nodes = [
    h("h1", { text: "Bindings" }),
    h("p", { class: "hint", text: "Who may call whom. A binding granted by the caller's side waits for the callee's side to approve it." }),
    h("p", { class: "hint", text: "A binding's limits replace the tenant's call-tree limits for the calls made through it (tenant's: not set). Its contract bounds what the caller may do on the callee: the skills it may name, and the tasks it may open in a UTC minute and day and have open at once, each shown as used / allowed (—: not set)." }),
    h("div", { class: "filters" }, field("Agent", picker)),
  ];
  const admin = app.role() === "admin";

  const list = chosen ? app.agents.filter((a) => a.name === chosen) : app.agents;
  const seen = new Map();
  const pages = await Promise.all(list.map((a) => api("GET", `/v1/agents/${seg(a.name)}/agents`).catch((e) => ({ error: e }))));
  for (const p of pages) {
    if (p.error) {
      if (chosen) throw p.error;
      continue;
    }
    for (const b of [...(p.outbound || []), ...(p.inbound || [])]) seen.set(b.id, b);
  }
  const all = [...seen.values()];
  const order = { pending: 0, approved: 1, revoked: 2 };
  all.sort((a, b) => order[bindingState(a)] - order[bindingState(b)] || String(b.created_at).localeCompare(String(a.created_at)));

  if (app.canChange() && app.agents.length) {
    const caller = select("caller", agentOptions(app), chosen || app.agents[0].name);
    const callees = input("callees", "", { required: true });
    const submit = h("button", { type: "submit", text: "Grant" });
    const form = h("form", { class: "inline-form", "aria-label": "Grant bindings" },
      field("Caller", caller),
      field("Callees", callees, "names, separated by commas (up to 25)"),
      h("div", { class: "field submit" }, submit));
    form.addEventListener("submit", act(app, submit, async () => {
      const names = callees.value.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);
      await api("POST", `/v1/agents/${seg(caller.value)}/agents`, { callees: names });
      app.reload();
    }));
    nodes.push(h("section", { class: "card", "aria-labelledby": "grant-title" }, h("h2", { id: "grant-title", text: "Grant" }), form));
  }

  const headers = ["Caller", "Callee", "State", "Approved", "Created", "Limits", "Contract and use", "Actions"];
  const row = (b) => {
    const state = bindingState(b);
    const controls = [];
    if (app.canChange() && state === "pending") {
      const approve = h("button", { type: "button", text: "Approve", "aria-label": `Approve ${app.agentName(b.caller_agent_id)} calling ${app.agentName(b.callee_agent_id)}` });
      approve.addEventListener("click", act(app, approve, async () => {
        await api("POST", `/v1/agents/${seg(app.agentName(b.callee_agent_id))}/agents/${seg(b.id)}/approve`);
        app.reload();
      }));
      controls.push(approve, " ");
    }
    if (app.canChange() && state !== "revoked") {
      controls.push(confirmButton("Revoke", "Revoke this binding?", async (btn) => {
        app.clearError();
        btn.disabled = true;
        try {
          await api("DELETE", `/v1/agents/${seg(app.agentName(b.caller_agent_id))}/agents/${seg(b.id)}`);
          app.reload();
        } catch (error) {
          app.showError(error);
          btn.disabled = false;
        }
      }));
    }
    // Limits and contract: an admin's to change (PATCH is admin only); every reader sees them.
    let editorRow = null;
    if (admin) {
      const edit = h("button", { type: "button", class: "edit-terms", text: "Edit limits and contract", "aria-label": `Edit limits and contract of ${app.agentName(b.caller_agent_id)} calling ${app.agentName(b.callee_agent_id)}` });
      edit.addEventListener("click", () => {
        if (!editorRow) {
          app.clearError();
          const form = bindingTermsForm(app, b, () => {
            editorRow.remove();
            editorRow = null;
            edit.focus();
          });
          editorRow = h("tr", { class: "binding-editor", "data-editor-for": b.id }, h("td", { colspan: String(headers.length) }, form));
          tr.after(editorRow);
        }
        editorRow.querySelector("input, select").focus();
      });
      if (controls.length) controls.push(" ");
      controls.push(edit);
    }
    const { limits, contract, usage } = bindingTerms(b);
    const tr = h("tr", { "data-binding": b.id, "data-state": state },
      h("td", null, agentLink(app, b.caller_agent_id)),
      h("td", null, agentLink(app, b.callee_agent_id)),
      h("td", null, badge(state)),
      h("td", null, when(b.approved_at)),
      h("td", null, when(b.created_at)),
      h("td", { class: "binding-limits" }, bindingLimitsShown(limits)),
      h("td", { class: "binding-contract" }, bindingContractShown(contract, usage)),
      h("td", null, controls.length ? h("span", { class: "controls" }, controls) : "—"));
    return tr;
  };
  const pending = all.filter((b) => bindingState(b) === "pending");
  const rest = all.filter((b) => bindingState(b) !== "pending");
  nodes.push(
    h("section", { class: "card", "aria-labelledby": "pending-title" }, h("h2", { id: "pending-title", text: `Waiting for approval (${pending.length})` }), table("Pending bindings", headers, pending.map(row), "No binding waits for approval.")),
    h("section", { class: "card", "aria-labelledby": "bindings-title" }, h("h2", { id: "bindings-title", text: "Bindings" }), table("Bindings", headers, rest.map(row), "No bindings.")),
  );
  return nodes;
}

// --- tasks ---------------------------------------------------------------------------------

async function tasksPage({ app, query }) {
  await app.loadAgents();
  const q = (k) => query.get(k) || "";
  const form = filterForm(app, [
    field("Agent", select("agent", agentOptions(app, "All agents"), q("agent"))),
    field("Direction", select("direction", [["", "Both"], ["inbound", "Inbound"], ["outbound", "Outbound"]], q("direction")), "with an agent"),
    field("State", select("state", [["", "Any state"], ...TASK_STATES.map((s) => [s, s.replace("_", " ")])], q("state"))),
    field("Words", input("q", q("q")), "every word, in any message"),
    field("Conversation (context id)", input("context_id", q("context_id"))),
    field("Changed since", input("since", q("since"), { placeholder: "2026-12-01T00:00:00Z" }), "RFC 3339"),
    field("Per page", input("limit", q("limit"), { type: "number", min: "1", max: "100", placeholder: "50" })),
  ], (data) => app.go(hashWith("tasks", data)));

  const params = {};
  for (const k of ["agent", "direction", "state", "q", "context_id", "since", "limit"]) if (q(k)) params[k] = q(k);
  const tbody = h("tbody");
  const results = h("div", { class: "results" });
  const more = h("button", { type: "button", text: "More" });
  let cursor = null;
  const addRows = (items) => {
    for (const t of items) {
      tbody.append(h("tr", { "data-task": t.id },
        h("td", null, when(t.created_at)),
        h("td", null, stateBadge(t.status.state)),
        h("td", null, agentLink(app, t.caller_agent_id), " → ", agentLink(app, t.callee_agent_id)),
        h("td", { class: "snippet" }, clip(firstText(t.input?.message), 140) || "—"),
        h("td", null, h("a", { href: taskHref(app, t.callee_agent_id, t.id), text: "Open", "aria-label": `Open task ${t.id}` }))));
    }
  };
  const load = async () => {
    const page = await api("GET", `/v1/tasks${qs({ ...params, cursor })}`);
    addRows(page.items || []);
    cursor = page.next_cursor || null;
    more.hidden = !cursor;
    return page;
  };
  more.addEventListener("click", act(app, more, load));
  const first = await load();
  if (!(first.items || []).length && !cursor) results.append(h("p", { class: "empty", text: "No task matches." }));
  else results.append(h("div", { class: "table-wrap" }, h("table", null,
    h("caption", { class: "sr-only", text: "Tasks" }),
    h("thead", null, h("tr", null, ["Created", "State", "Caller → callee", "Message", "Task"].map((x) => h("th", { scope: "col", text: x })))),
    tbody)));
  results.append(h("p", null, more));
  return [h("h1", { text: "Tasks" }), form, results];
}

function renderPart(part, i) {
  if (typeof part.text === "string") return h("div", { class: "part part-text" }, h("span", { class: "part-kind", text: `text ${i + 1}` }), longText(part.text, 2000, "pre"));
  if (part.file) {
    const f = part.file;
    const uri = String(f.uri || "");
    const safe = /^https?:\/\//i.test(uri);
    const shown = uri.startsWith("data:") ? `embedded data (${uri.length.toLocaleString("en")} characters)` : uri;
    return h("div", { class: "part part-file" },
      h("span", { class: "part-kind", text: `file ${i + 1}` }),
      dl([
        ["Name", f.name || "—"],
        ["Type", f.mime || "—"],
        ["URI", safe ? h("a", { href: uri, rel: "noopener noreferrer nofollow", target: "_blank" }, longText(uri, 200)) : longText(shown, 200)],
      ]));
  }
  if ("data" in part) {
    let text;
    try {
      text = JSON.stringify(part.data, null, 2);
    } catch {
      text = String(part.data);
    }
    return h("div", { class: "part part-data" }, h("span", { class: "part-kind", text: `data ${i + 1}` }), longText(text, 2000, "pre"));
  }
  return h("div", { class: "part" }, longText(JSON.stringify(part), 500, "pre"));
}

function renderMessage(message, label) {
  if (!message) return null;
  return h("article", { class: `message role-${message.role === "user" ? "user" : "agent"}` },
    h("p", { class: "message-head", text: `${label || message.role}${message.message_id ? ` · ${message.message_id}` : ""}` }),
    (message.parts || []).length ? (message.parts || []).map(renderPart) : h("p", { class: "empty", text: "(no parts)" }));
}

function renderTask(app, task, live) {
  const s = task.status || {};
  return [
    h("section", { class: "card", "aria-labelledby": "status-title" },
      h("h2", { id: "status-title" }, "Status ", stateBadge(s.state), " ", live),
      dl([
        ["Updated", when(s.timestamp || task.updated_at)],
        s.message ? ["Status message", renderMessage(s.message, "status")] : null,
        task.error ? ["Error", longText(task.error, 500)] : null,
        ["Caller", agentLink(app, task.caller_agent_id)],
        ["Callee", agentLink(app, task.callee_agent_id)],
        ["Delivery", task.delivery],
        ["Conversation", h("a", { href: `#/tasks${qs({ context_id: task.context_id })}`, text: task.context_id })],
        ["Created", when(task.created_at)],
      ])),
    h("section", { class: "card", "aria-labelledby": "lineage-title" },
      h("h2", { id: "lineage-title", text: "Lineage" }),
      dl([
        ["Call", h("code", { text: task.call_id })],
        ["Parent call", task.parent_call_id ? h("code", { text: task.parent_call_id }) : "none (a root call)"],
        ["Root call", h("a", { href: `#/calls/${seg(task.root_call_id)}`, text: task.root_call_id })],
      ])),
    h("section", { class: "card", "aria-labelledby": "history-title" },
      h("h2", { id: "history-title", text: `History (${(task.history || []).length})` }),
      (task.history || []).length ? task.history.map((m) => renderMessage(m)) : renderMessage(task.input?.message, "user (input)")),
    h("section", { class: "card", "aria-labelledby": "artifacts-title" },
      h("h2", { id: "artifacts-title", text: `Artifacts (${(task.artifacts || []).length})` }),
      (task.artifacts || []).length
        ? task.artifacts.map((a, i) => h("article", { class: "artifact" }, h("h3", { text: a.name || `artifact ${i + 1}` }), (a.parts || []).map(renderPart)))
        : h("p", { class: "empty", text: "No artifacts yet." })),
  ];
}

async function taskPage(ctx) {
  const { app, params } = ctx;
  const [callee, id] = params;
  if (!callee || !id) throw new ApiError(404, "not_found", "task not found", null);
  await (app.agents.length ? null : app.loadAgents().catch(() => null));
  const path = `/v1/agents/${seg(callee)}/tasks/${seg(id)}`;
  let task = await api("GET", path);
  // The task as last drawn, to tell a changed task from the same one read again.
  let drawnText = JSON.stringify(task);
  const body = h("div", { class: "task-body" });
  const live = h("span", { class: "live", role: "status", "data-live": "off" });
  // Delivery attempts are a push task's: a pull task is claimed, never delivered.
  const pushed = task.delivery === "push";
  const attempts = h("div");
  const draw = () => {
    clear(body);
    body.append(...renderTask(app, task, live));
  };
  draw();

  const loadAttempts = async () => {
    try {
      const page = await api("GET", `${path}/attempts`);
      clear(attempts);
      attempts.append(attemptsTable(page.items || []));
    } catch (error) {
      clear(attempts);
      attempts.append(h("p", { class: "section-error", text: `Could not load: ${app.describe(error)}` }));
    }
  };
  if (pushed) loadAttempts();
  // A push task's delivery is replayed by its callee's owner or an admin; the attempts are read
  // again a moment after (the attempt is made by a worker, soon after the 202).
  const calleeAgent = app.agents.find((a) => a.id === task.callee_agent_id);
  const replay = pushed && app.speaksFor(calleeAgent)
    ? replayLine(app, callee, id, () => {
        setTimeout(() => {
          if (ctx.current()) loadAttempts();
        }, 2000);
      })
    : null;

  if (!FINAL.has(task.status?.state)) {
    live.textContent = "live";
    live.dataset.live = "on";
    const source = new EventSource(eventsUrl(callee, id));
    let refreshing = Promise.resolve();
    const refresh = () => {
      refreshing = refreshing.then(async () => {
        if (!ctx.current()) return;
        try {
          const fresh = await api("GET", path);
          if (!ctx.current()) return;
          // The stream opens with the task as it stands: a redraw of an unchanged task would
          // only fold back what the reader unfolded.
          const freshText = JSON.stringify(fresh);
          if (freshText === drawnText) return;
          [task, drawnText] = [fresh, freshText];
          draw();
          if (pushed) loadAttempts();
        } catch (error) {
          if (ctx.current()) app.showError(error);
        }
      });
    };
    const close = () => {
      source.close();
      live.textContent = "finished";
      live.dataset.live = "off";
    };
    for (const name of ["task", "status", "progress", "question", "answer", "artifact"]) source.addEventListener(name, refresh);
    source.addEventListener("final", () => {
      close();
      refresh();
    });
    source.addEventListener("error", (event) => {
      if (event.data) {
        // The stream's own error event: the browser reconnects with Last-Event-ID.
        live.textContent = "reconnecting";
      } else if (source.readyState === EventSource.CLOSED) {
        live.textContent = "not live (reload to follow it)";
        live.dataset.live = "off";
      } else {
        live.textContent = "reconnecting";
      }
    });
    source.addEventListener("open", () => {
      live.textContent = "live";
    });
    app.cleanups.push(() => source.close());
  }

  return [
    h("p", { class: "crumbs" }, h("a", { href: "#/tasks", text: "Tasks" }), " / "),
    h("h1", { class: "name", text: `Task ${id}` }),
    body,
    pushed
      ? h("section", { class: "card", "aria-labelledby": "task-attempts-title" }, h("h2", { id: "task-attempts-title", text: "Delivery attempts" }), replay, attempts)
      : null,
  ];
}

// --- calls ---------------------------------------------------------------------------------

async function callsPage({ app, params }) {
  const root = params[0] || "";
  const rootInput = input("root_call_id", root, { required: true });
  const form = filterForm(app, [field("Root call id", rootInput)], () => app.go(`#/calls/${seg(rootInput.value.trim())}`), "Show tree");
  const nodes = [h("h1", { text: "Calls" }), form];
  if (!root) {
    nodes.push(h("p", { class: "hint", text: "A task's page links to its root call; or paste a root call id." }));
    return nodes;
  }
  await app.loadAgents();
  const page = await api("GET", `/v1/calls${qs({ root_call_id: root })}`);
  const calls = page.items || [];
  // Refusals are not calls, but their audit entries carry the lineage the call would have had:
  // each refused open of this tree hangs under the call that made it.
  const refusals = calls.length ? await refusedOpens(root, calls[0].at).catch(() => []) : [];
  const byId = new Map(calls.map((c) => [c.call_id, { call: c, children: [] }]));
  const tops = [];
  for (const n of byId.values()) {
    const parent = n.call.parent_call_id && byId.get(n.call.parent_call_id);
    if (parent && parent !== n) parent.children.push(n);
    else tops.push(n);
  }
  for (const entry of refusals) {
    const n = { refusal: entry, children: [] };
    const parent = entry.parent_call_id && byId.get(entry.parent_call_id);
    (parent ? parent.children : tops).push(n);
  }
  const drawn = new Set();
  const drawRefusal = (e) =>
    h("li", { class: "call refused", "data-refused": e.id },
      h("div", { class: "call-line" },
        agentLink(app, e.actor?.id), " → ", agentLink(app, e.target), " ",
        h("span", { class: "badge badge-refused", text: "refused" }), " ",
        reasonOf(e.reason, e.policy),
        (e.count ?? 1) > 1 ? h("span", { class: "hint", text: ` ×${e.count}` }) : null, " ",
        h("span", { class: "hint" }, "in the minute from ", when(e.at))));
  const drawNode = (n, depth) => {
    if (drawn.has(n) || depth > 64) return null;
    drawn.add(n);
    if (n.refusal) return drawRefusal(n.refusal);
    const c = n.call;
    return h("li", { class: "call", "data-call": c.call_id },
      h("div", { class: "call-line" },
        agentLink(app, c.caller_agent_id), " → ", agentLink(app, c.callee_agent_id), " ",
        h("a", { href: taskHref(app, c.callee_agent_id, c.task_id), text: "task", "aria-label": `Task ${c.task_id}` }), " ",
        h("span", { class: "hint" }, when(c.at))),
      n.children.length ? h("ul", { class: "tree" }, n.children.map((k) => drawNode(k, depth + 1))) : null);
  };
  const counted = `${calls.length} call${calls.length === 1 ? "" : "s"}`;
  const refused = refusals.length ? `, ${refusals.length} refused` : "";
  nodes.push(h("section", { class: "card", "aria-labelledby": "tree-title" },
    h("h2", { id: "tree-title", text: `Call tree (${counted}${refused})` }),
    calls.length ? h("ul", { class: "tree root" }, tops.map((n) => drawNode(n, 0))) : h("p", { class: "empty", text: "No call of this tenant has this root." })));
  return nodes;
}

/** The refused opens of the tree `root` since its first call (`since`), from the audit log. */
async function refusedOpens(root, since) {
  const from = new Date(Date.parse(since) - 60_000).toISOString();
  const found = [];
  let cursor = null;
  for (let pages = 0; pages < 10; pages += 1) {
    const audit = await api("GET", `/v1/audit${qs({ action: "task.open", outcome: "refused", since: from, limit: 100, cursor })}`);
    found.push(...(audit.items || []).filter((e) => e.root_call_id === root));
    cursor = audit.next_cursor;
    if (!cursor) break;
  }
  return found.reverse();
}

// --- audit ---------------------------------------------------------------------------------

async function auditPage({ app, query }) {
  await app.loadAgents();
  const q = (k) => query.get(k) || "";
  const actions = h("datalist", { id: "audit-actions" }, AUDIT_ACTIONS.map((a) => h("option", { value: a })));
  const form = filterForm(app, [
    field("Agent", select("agent", agentOptions(app, "Any agent"), q("agent")), "acted, targeted, or caller or callee of a binding or task"),
    field("Action", input("action", q("action"), { list: "audit-actions" }), "a prefix, e.g. binding."),
    field("Outcome", select("outcome", [["", "Any outcome"], ["allowed", "Allowed"], ["refused", "Refused"], ["would_refuse", "Would refuse (a tried policy)"]], q("outcome"))),
    field("Since", input("since", q("since"), { placeholder: "2026-12-01T00:00:00Z" }), "RFC 3339"),
    field("Per page", input("limit", q("limit"), { type: "number", min: "1", max: "100", placeholder: "50" })),
  ], (data) => app.go(hashWith("audit", data)));
  const params = {};
  for (const k of ["agent", "action", "outcome", "since", "limit"]) if (q(k)) params[k] = q(k);
  const agentIds = new Set(app.agents.map((a) => a.id));
  const who = (id) => (agentIds.has(id) ? agentLink(app, id) : h("code", null, longText(id || "—", 60)));
  const tbody = h("tbody");
  const more = h("button", { type: "button", text: "More" });
  let cursor = null;
  const load = async () => {
    const page = await api("GET", `/v1/audit${qs({ ...params, cursor })}`);
    for (const e of page.items || []) {
      const task = e.task_id && (e.action.startsWith("task.") && agentIds.has(e.target))
        ? h("a", { href: taskHref(app, e.target, e.task_id), text: "task" })
        : e.task_id ? h("code", { text: e.task_id }) : null;
      tbody.append(h("tr", { "data-audit": e.id, "data-action": e.action },
        h("td", null, when(e.at)),
        // The gateway acts as itself (an endpoint disabled after its failures): no id to show.
        h("td", null, e.actor?.kind ? `${e.actor.kind} ` : "",
          e.actor?.name ? h("span", { title: e.actor.id, text: e.actor.name }) : e.actor?.id || !e.actor?.kind ? who(e.actor?.id) : null,
          signedInWith(e.actor?.signed_in_with)),
        h("td", null, h("code", { text: e.action })),
        h("td", null, who(e.target)),
        h("td", null, badge(e.outcome)),
        h("td", null, reasonOf(e.reason, e.policy)),
        h("td", null, String(e.count ?? 1)),
        h("td", null, task || "—", e.call_id ? [" ", h("span", { class: "hint" }, "call ", h("code", { text: e.call_id }))] : null)));
    }
    cursor = page.next_cursor || null;
    more.hidden = !cursor;
  };
  more.addEventListener("click", act(app, more, load));
  await load();
  return [
    h("h1", { text: "Audit log" }), actions, form,
    h("div", { class: "table-wrap" }, h("table", null,
      h("caption", { class: "sr-only", text: "Audit entries" }),
      h("thead", null, h("tr", null, ["At", "Actor", "Action", "Target", "Outcome", "Reason", "Count", "Task / call"].map((x) => h("th", { scope: "col", text: x })))),
      tbody)),
    // A filtered page reads on until it is full; one that stops at its read budget says so.
    tbody.children.length ? null : h("p", { class: "empty", text: cursor ? "No matching entry in the part of the log this page read: More reads on." : "No matching entry." }),
    h("p", null, more),
  ];
}

/** How an actor signed in, when it was with a token: the issuer and the token's subject. */
function signedInWith(token) {
  if (!token || typeof token !== "object" || !token.issuer) return null;
  return h("span", { class: "hint signed-in-with" },
    " signed in with ", h("code", null, longText(token.issuer, 80)),
    " as ", h("code", null, longText(token.subject ?? "—", 80)));
}

// --- members -------------------------------------------------------------------------------

async function membersPage({ app }) {
  const page = await api("GET", "/v1/members");
  const keyBox = h("div");
  const nodes = [h("h1", { text: "Members" }), keyBox];
  const name = input("name", "", { required: true, maxlength: "200" });
  const role = select("role", [["viewer", "Viewer"], ["member", "Member"], ["admin", "Admin"]], "viewer");
  const submit = h("button", { type: "submit", text: "Create member" });
  const form = h("form", { class: "inline-form", "aria-label": "Create a member" }, field("Name", name), field("Role", role), h("div", { class: "field submit" }, submit));
  form.addEventListener("submit", act(app, submit, async () => {
    const created = await api("POST", "/v1/members", { name: name.value.trim(), role: role.value });
    name.value = "";
    revealKey(keyBox, created.key, `${created.name} (${created.role})`);
    const list = await api("GET", "/v1/members");
    drawList(list.items || []);
  }));
  nodes.push(h("section", { class: "card", "aria-labelledby": "new-member-title" }, h("h2", { id: "new-member-title", text: "New member" }), form));
  const listBox = h("div");
  const drawList = (members) => {
    clear(listBox);
    listBox.append(table("Members", ["Name", "Role", "Created", "Keys", "Actions"], members.map((m) => {
      const keys = h("ul", { class: "keys" }, (m.keys || []).map((k) => h("li", null,
        h("code", { text: k.key_id }), " ",
        k.revoked_at ? ["revoked ", when(k.revoked_at)] : ["last used ", when(k.last_used_at), " ",
          confirmButton("Revoke", "Revoke this key?", async (b) => {
            app.clearError();
            b.disabled = true;
            try {
              await api("DELETE", `/v1/members/${seg(m.member_id)}/keys/${seg(k.key_id)}`);
              app.reload();
            } catch (error) {
              app.showError(error);
              b.disabled = false;
            }
          })])));
      const issue = h("button", { type: "button", text: "Issue a key", "aria-label": `Issue a key for ${clip(m.name, 60)}` });
      issue.addEventListener("click", act(app, issue, async () => {
        const created = await api("POST", `/v1/members/${seg(m.member_id)}/keys`);
        revealKey(keyBox, created.key, m.name);
      }));
      return [h("span", { class: "name" }, longText(m.name, 80)), badge(m.role), when(m.created_at), keys, issue];
    }), "No members."));
  };
  drawList(page.items || []);
  nodes.push(h("section", { class: "card", "aria-labelledby": "members-title" }, h("h2", { id: "members-title", text: "Members" }), listBox));
  return nodes;
}

// --- trusted issuers -----------------------------------------------------------------------

/**
 * The rows of an issuer's subjects to edit: each a token subject (`sub`, exactly) and the agent
 * or member it signs in as. `value()` is the list as the API takes it.
 */
function subjectsEditor(app, members, initial, legend = "Subjects") {
  const rows = h("div", { class: "subject-rows" });
  const empty = h("p", { class: "empty", text: "No subjects: the issuer's tokens sign no one in until one is added." });
  const choices = (current) => {
    const agents = app.agents.map((a) => [`agent:${a.id}`, a.status === "retired" ? `${a.name} (retired)` : a.name]);
    const people = members.map((m) => [`member:${m.member_id}`, `${m.name} (${m.role})`]);
    // A principal the lists no longer hold keeps its place, by its id.
    if (current && ![...agents, ...people].some(([v]) => v === current)) {
      const [kind, id] = current.split(/:(.*)/s);
      (kind === "agent" ? agents : people).push([current, `${kind} ${id}`]);
    }
    const group = (label, options) =>
      options.length ? h("optgroup", { label }, options.map(([value, text]) => h("option", { value, text, selected: value === current }))) : null;
    return h("select", { name: "signs_in_as", required: true }, group("Agents", agents), group("Members", people));
  };
  const renumber = () => {
    const all = [...rows.querySelectorAll(".subject-row")];
    all.forEach((row, i) => {
      row.querySelector("button.remove-subject").setAttribute("aria-label", `Remove subject ${i + 1}`);
    });
    empty.hidden = all.length > 0;
  };
  const add = (grant) => {
    const subject = input("subject", grant?.subject ?? "", { required: true, maxlength: "255" });
    const current = grant ? (grant.agent_id ? `agent:${grant.agent_id}` : `member:${grant.member_id}`) : app.agents[0] ? `agent:${app.agents[0].id}` : "";
    const who = choices(current);
    const row = h("div", { class: "subject-row inline-form" },
      field("Subject", subject),
      field("Signs in as", who),
      h("div", { class: "field submit" }, h("button", { type: "button", class: "remove-subject", text: "Remove subject" })));
    row.querySelector("button.remove-subject").addEventListener("click", () => {
      row.remove();
      renumber();
    });
    rows.append(row);
    renumber();
    return subject;
  };
  for (const grant of initial || []) add(grant);
  renumber();
  const more = button("Add a subject", () => add(null).focus());
  return {
    node: h("fieldset", { class: "subjects" }, h("legend", { text: legend }),
      h("p", { class: "hint", text: "Each subject is a token's sub, exactly, and signs in as the agent or member chosen beside it." }),
      empty, rows, h("p", null, more)),
    value() {
      return [...rows.querySelectorAll(".subject-row")].map((row) => {
        const subject = row.querySelector("input[name=subject]").value.trim();
        const [kind, id] = row.querySelector("select[name=signs_in_as]").value.split(/:(.*)/s);
        return kind === "member" ? { subject, member_id: id } : { subject, agent: id };
      });
    },
  };
}

/** Who a subject signs in as: an agent by name, a member by name when the page knows it. */
function signsInAs(app, members, grant) {
  if (grant.agent_id) return h("span", null, "agent ", agentLink(app, grant.agent_id));
  const m = members.find((x) => x.member_id === grant.member_id);
  return m
    ? h("span", { title: grant.member_id }, "member ", h("span", { class: "name" }, longText(m.name, 80)), " ", badge(m.role))
    : h("span", null, "member ", h("code", null, longText(grant.member_id ?? "—", 60)));
}

function issuerCard(app, members, issuer, admin, index) {
  const titleId = `issuer-${index}-title`;
  const subjectsBox = h("div");
  const discovery = String(issuer.discovery_url || "");
  const drawSubjects = () => {
    clear(subjectsBox);
    subjectsBox.append(table(`Subjects of ${issuer.issuer}`, ["Subject", "Signs in as"], (issuer.subjects || []).map((g) => [
      h("code", null, longText(g.subject, 120)), signsInAs(app, members, g),
    ]), "No subjects: its tokens sign no one in."));
    if (admin) subjectsBox.append(h("p", null, button("Edit subjects", edit)));
  };
  const edit = () => {
    app.clearError();
    const editor = subjectsEditor(app, members, issuer.subjects, "The new list of subjects");
    const save = h("button", { type: "submit", text: "Save subjects" });
    const cancel = button("Cancel", () => drawSubjects());
    const form = h("form", { class: "subjects-form", "aria-label": `Subjects of ${clip(issuer.issuer, 80)}` },
      editor.node, h("p", { class: "hint", text: "Saving replaces the whole list: a subject left out signs in no more." }),
      h("div", { class: "row" }, save, cancel));
    form.addEventListener("submit", act(app, save, async () => {
      await api("PATCH", `/v1/issuers/${seg(issuer.id)}`, { subjects: editor.value() });
      app.reload();
    }));
    clear(subjectsBox);
    subjectsBox.append(form);
    const first = form.querySelector("input, select, button");
    if (first) first.focus();
  };
  drawSubjects();
  const remove = admin
    ? confirmButton("Remove", `Stop trusting ${clip(issuer.issuer, 60)}? Its tokens sign in no more.`, async (b) => {
        app.clearError();
        b.disabled = true;
        try {
          await api("DELETE", `/v1/issuers/${seg(issuer.id)}`);
          app.reload();
        } catch (error) {
          app.showError(error);
          b.disabled = false;
        }
      })
    : null;
  return h("section", { class: "card", "aria-labelledby": titleId, "data-issuer": issuer.id },
    h("h2", { id: titleId, class: "name" }, longText(issuer.issuer, 120)),
    dl([
      ["Audience", h("code", null, longText(issuer.audience, 200))],
      ["Discovery", /^https?:\/\//i.test(discovery)
        ? h("a", { href: discovery, rel: "noopener noreferrer nofollow", target: "_blank" }, longText(discovery, 200))
        : longText(discovery || "—", 200)],
      ["Id", h("code", { text: issuer.id })],
      ["Trusted", when(issuer.created_at)],
      ["Updated", when(issuer.updated_at)],
    ]),
    h("h3", { text: "Subjects" }),
    subjectsBox,
    remove ? h("p", null, remove) : null);
}

/**
 * An issuer just trusted whose discovery document the gateway could not read (`discovery.read`
 * false in the trust's answer), told on the next drawing of the page and then forgotten: the
 * list the page draws from does not say it.
 */
let unreadDiscovery = null;

/** The notice of a trusted issuer whose discovery document could not be read. */
function unreadDiscoveryNotice(unread) {
  return h("p", { class: "notice discovery-notice", role: "status", "data-issuer": unread.id },
    "Trusted ", h("code", null, longText(unread.issuer, 120)),
    ", but the gateway could not read its discovery document: ", longText(unread.problem || "no reason given", 400),
    ". Its tokens are refused until the document can be read; check the URL, or remove the issuer if it is wrong.");
}

async function issuersPage({ app }) {
  const admin = app.role() === "admin";
  const unread = unreadDiscovery;
  unreadDiscovery = null;
  const [page, members] = await Promise.all([
    api("GET", "/v1/issuers"),
    // Members' names are an admin's to read; the others see a member subject by its id.
    admin ? api("GET", "/v1/members").then((p) => p.items || []) : Promise.resolve([]),
    app.loadAgents(),
  ]);
  const issuers = page.items || [];
  const nodes = [
    h("h1", { text: "Trusted issuers" }),
    h("p", { class: "hint", text: "OpenID Connect providers whose tokens sign this tenant's agents and members in, each for one audience. A token's subject signs in as the agent or member listed for it, exactly as that one's key would." }),
  ];
  if (unread && issuers.some((x) => x.id === unread.id)) nodes.push(unreadDiscoveryNotice(unread));
  if (admin) {
    const issuer = input("issuer", "", { required: true, maxlength: "512", inputmode: "url", placeholder: "https://token.actions.githubusercontent.com" });
    const audience = input("audience", "", { required: true, maxlength: "512" });
    const editor = subjectsEditor(app, members, []);
    const submit = h("button", { type: "submit", text: "Trust issuer" });
    const form = h("form", { "aria-label": "Trust an issuer" },
      h("div", { class: "inline-form" },
        field("Issuer URL", issuer, "exactly as its tokens carry it in iss"),
        field("Audience", audience, "the aud its tokens carry for this tenant")),
      editor.node,
      h("div", { class: "row" }, submit));
    form.addEventListener("submit", act(app, submit, async () => {
      const trusted = await api("POST", "/v1/issuers", { issuer: issuer.value.trim(), audience: audience.value.trim(), subjects: editor.value() });
      const found = trusted?.discovery;
      if (found && found.read === false) unreadDiscovery = { id: trusted.id, issuer: trusted.issuer, problem: found.problem };
      app.reload();
    }));
    nodes.push(h("section", { class: "card", "aria-labelledby": "trust-title" },
      h("h2", { id: "trust-title", text: "Trust an issuer" }),
      h("p", { class: "hint", text: "The gateway reads the issuer's discovery document at once (it must name this issuer). One it cannot read yet does not stop the trust: the page says so, and the issuer's tokens are refused until it can be read." }),
      form));
  }
  if (!issuers.length) nodes.push(h("p", { class: "empty", text: "This tenant trusts no issuer: its agents and members sign in with keys only." }));
  issuers.forEach((x, i) => nodes.push(issuerCard(app, members, x, admin, i)));
  return nodes;
}

// --- settings ------------------------------------------------------------------------------

/** A count limit as shown: its number, or "no limit" for null. */
function countLimit(value) {
  return value === null || value === undefined ? "no limit" : String(value);
}

/** The call-tree limits: shown to every reader, changed by an admin (one PATCH of what changed). */
function callTreeLimits(app, settings, admin) {
  const shown = dl([
    ["Most calls on one path", String(settings.max_call_depth)],
    ["Calls back into their own path", settings.refuse_cycles ? "refused" : "allowed"],
    ["Most tasks one call opens", countLimit(settings.max_fan_out)],
    ["Most open tasks in one tree", countLimit(settings.max_open_in_tree)],
  ]);
  const sec = h("section", { class: "card", "aria-labelledby": "limits-title" },
    h("h2", { id: "limits-title", text: "Call-tree limits" }),
    h("p", { class: "hint", text: "How far a chain of calls may go (each open names the call that made it). A call past a limit is refused as a missing binding is, and its audit entry (task.open, refused) names the limit." }),
    shown);
  if (!admin) return sec;
  const number = (name, value, max, required) =>
    input(name, value ?? "", { type: "number", min: "1", max: String(max), step: "1", inputmode: "numeric", required, placeholder: required ? null : "no limit" });
  const depth = number("max_call_depth", settings.max_call_depth, 64, true);
  const fanOut = number("max_fan_out", settings.max_fan_out, 10000, false);
  const openInTree = number("max_open_in_tree", settings.max_open_in_tree, 10000, false);
  const cycles = h("input", { type: "checkbox", name: "refuse_cycles", checked: !!settings.refuse_cycles });
  const submit = h("button", { type: "submit", text: "Save limits" });
  const form = h("form", { "aria-label": "Call-tree limits" },
    h("div", { class: "inline-form" },
      field("Most calls on one path", depth, "1–64; the root call is 1"),
      field("Most tasks one call opens", fanOut, "1–10,000; empty: no limit"),
      field("Most open tasks in one tree", openInTree, "1–10,000; empty: no limit")),
    h("div", { class: "inline-form" },
      h("div", { class: "field check" }, cycles, h("label", { for: (cycles.id = "refuse-cycles"), text: "Refuse a call to an agent already on its path to the root" })),
      h("div", { class: "field submit" }, submit)));
  form.addEventListener("submit", act(app, submit, async () => {
    const count = (box) => (box.value.trim() === "" ? null : Number(box.value));
    const wanted = {
      max_call_depth: Number(depth.value),
      refuse_cycles: cycles.checked,
      max_fan_out: count(fanOut),
      max_open_in_tree: count(openInTree),
    };
    // Only what changed: a limit another admin changed meanwhile is not put back.
    const patch = Object.fromEntries(Object.entries(wanted).filter(([k, v]) => v !== (settings[k] ?? null)));
    await api("PATCH", "/v1/tenant/settings", patch);
    app.reload();
  }));
  sec.append(form);
  return sec;
}

// --- policies ------------------------------------------------------------------------------

const POLICY_EXAMPLE = `forbid(principal, action == Action::"open", resource)
  when { resource.name == "billing" && context has skill && context.skill == "refund" };`;

/** One policy: its mode, description and text; an admin tries, enforces or removes it. */
function policyCard(app, p, admin) {
  const enforced = p.mode === "enforce";
  const card = h("article", { class: "policy-card", "data-policy-name": p.name },
    h("h3", null, h("code", { text: p.name }), " ", badge(enforced ? "enforced" : "dry run", enforced ? "refused" : "pending")),
    p.description ? h("p", { text: p.description }) : null,
    h("pre", { class: "policy-text", text: p.policy }),
    h("p", { class: "hint" }, "changed ", when(p.updated_at)));
  if (!admin) return card;
  const patch = (change) => act(app, null, async () => {
    await api("PATCH", "/v1/tenant/policies", { policies: { [p.name]: change } });
    app.reload();
  });
  card.append(h("div", { class: "actions" },
    button(enforced ? "Try only (dry run)" : "Enforce", patch({ mode: enforced ? "dry_run" : "enforce" })),
    button("Remove", patch(null), "danger")));
  return card;
}

/** An admin's form for a new policy, or a new text for one of the same name. */
function policyForm(app) {
  const name = input("name", "", { required: true, pattern: "[a-z0-9][a-z0-9_\\-]{0,63}", placeholder: "no-refunds" });
  const mode = select("mode", [["dry_run", "Dry run: log what it would refuse"], ["enforce", "Enforce: refuse"]], "dry_run");
  const description = input("description", "", { maxlength: "500" });
  const text = h("textarea", { name: "policy", rows: "5", required: true, spellcheck: "false", placeholder: POLICY_EXAMPLE });
  const submit = h("button", { type: "submit", text: "Save policy" });
  const form = h("form", { "aria-label": "Save a policy" },
    h("div", { class: "inline-form" }, field("Name", name, "a-z, 0-9, - and _"), field("Mode", mode), field("Description", description)),
    field("Policy (Cedar, one forbid)", text, "checked against the schema when saved"),
    h("div", { class: "field submit" }, submit));
  form.addEventListener("submit", act(app, submit, async () => {
    const policy = { policy: text.value, mode: mode.value, description: description.value.trim() || null };
    await api("PATCH", "/v1/tenant/policies", { policies: { [name.value.trim()]: policy } });
    app.reload();
  }));
  return form;
}

/** Whether the gate would allow a call now, and why (POST /v1/tenant/policies/check). */
function checkForm(app) {
  const names = app.agents.map((a) => [a.name, a.name]);
  const caller = select("caller", names, names[0]?.[0]);
  const callee = select("callee", names, names[1]?.[0] ?? names[0]?.[0]);
  const skill = input("skill", "", { placeholder: "any" });
  const action = select("action", ["open", "answer", "cancel", "read"].map((a) => [a, a]), "open");
  const verdict = h("p", { class: "verdict", "aria-live": "polite" });
  const submit = h("button", { type: "submit", text: "Check" });
  const form = h("form", { "aria-label": "Check a call" },
    h("div", { class: "inline-form" }, field("Caller", caller), field("Callee", callee), field("Skill", skill), field("Action", action),
      h("div", { class: "field submit" }, submit)),
    verdict);
  form.addEventListener("submit", act(app, submit, async () => {
    const body = { caller: caller.value, callee: callee.value, action: action.value, skill: skill.value.trim() || null };
    const v = await api("POST", "/v1/tenant/policies/check", body);
    clear(verdict);
    verdict.dataset.allowed = String(v.allowed);
    verdict.append(badge(v.allowed ? "allowed" : "refused", v.allowed ? "allowed" : "refused"), " ",
      v.allowed ? "" : reasonOf(v.reason, v.policies.join(",")),
      v.would_refuse.length ? h("span", { class: "hint" }, " a tried policy would refuse it: ", h("code", { text: v.would_refuse.join(", ") })) : null);
  }));
  return form;
}

/** The tenant's policies: read by admins and viewers, changed by admins. */
function tenantPolicies(app, admin) {
  return section(app, "Policies", async () => {
    await app.loadAgents();
    const set = await api("GET", "/v1/tenant/policies");
    const nodes = [h("p", { class: "hint", text: "Cedar rules over the caller (principal), the action (open, answer, cancel, read), the callee (resource) and the call (context: depth, root_caller, skill, now, tenant). A binding permits a call; a policy may only forbid it. A dry-run policy refuses nothing: what it would refuse is on the audit log as would_refuse." })];
    if (!set.items.length) nodes.push(h("p", { class: "empty", text: "No policies: the bindings, their contracts and the call-tree limits govern every call." }));
    nodes.push(...set.items.map((p) => policyCard(app, p, admin)));
    if (admin) nodes.push(h("h3", { text: "Add or replace a policy" }), policyForm(app));
    nodes.push(h("h3", { text: "Would this call be allowed?" }), checkForm(app));
    return nodes;
  }, "policies-title");
}

async function settingsPage({ app }) {
  const settings = await api("GET", "/v1/tenant/settings");
  const admin = app.role() === "admin";
  const nodes = [h("h1", { text: "Settings" }), dl([["Tenant", h("code", { text: settings.tenant_id })], ["Word search", settings.word_search ? "on" : "off"]])];
  if (admin) {
    const box = h("input", { type: "checkbox", name: "word_search", checked: !!settings.word_search });
    const submit = h("button", { type: "submit", text: "Save" });
    const form = h("form", { class: "inline-form" }, h("div", { class: "field check" }, box, h("label", { for: (box.id = "word-search"), text: "Index the words of task messages (search with q)" })), h("div", { class: "field submit" }, submit));
    form.addEventListener("submit", act(app, submit, async () => {
      await api("PATCH", "/v1/tenant/settings", { word_search: box.checked });
      app.reload();
    }));
    nodes.push(form);
  }
  nodes.push(callTreeLimits(app, settings, admin));
  nodes.push(tenantPolicies(app, admin));
  return nodes;
}

export const pages = {
  agents: (ctx) => (ctx.params.length ? agentPage(ctx) : agentsPage(ctx)),
  bindings: bindingsPage,
  tasks: (ctx) => (ctx.params.length ? taskPage(ctx) : tasksPage(ctx)),
  calls: callsPage,
  audit: auditPage,
  members: membersPage,
  issuers: issuersPage,
  settings: settingsPage,
};

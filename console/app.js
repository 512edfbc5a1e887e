// The console's shell: session, navigation, routing and the error line.
import { ApiError, api, forgetSession, getSession, resumeSession, setUnauthorizedHandler, signIn, signOut } from "./api.js";
import { append, clear, field, h } from "./dom.js";
import { pages } from "./pages.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const who = document.getElementById("who");
const whoText = document.getElementById("who-text");
const errorLine = document.getElementById("error");

const app = {
  agents: [], // the tenant's agents, for names
  cleanups: [], // closers of the current page (event streams)
  renderToken: 0,
  role() {
    return getSession()?.role ?? null;
  },
  canChange() {
    const role = this.role();
    return role === "admin" || role === "member";
  },
  /** Whether the signed-in person speaks for `agent`, as the API decides it: an admin, or the
   *  member who owns it. */
  speaksFor(agent) {
    const session = getSession();
    if (!session || !agent) return false;
    if (session.role === "admin") return true;
    return session.role === "member" && !!session.member_id && agent.owner_member_id === session.member_id;
  },
  agentName(id) {
    const a = this.agents.find((x) => x.id === id);
    return a ? a.name : id;
  },
  async loadAgents() {
    const page = await api("GET", "/v1/agents");
    this.agents = Array.isArray(page?.items) ? page.items : [];
    return this.agents;
  },
  showError(error) {
    showError(error);
  },
  clearError,
  go(hash) {
    if (location.hash === hash) route();
    else location.hash = hash;
  },
  reload() {
    route({ keepError: true });
  },
  describe: describeError,
};

function describeError(error) {
  if (error instanceof ApiError) {
    const parts = [error.status ? `${error.message} (HTTP ${error.status}${error.code ? `, ${error.code}` : ""})` : error.message];
    if (error.requestId) parts.push(`request id ${error.requestId}`);
    return parts.join(" · ");
  }
  return error && error.message ? error.message : String(error);
}

function showError(error) {
  errorLine.textContent = `Error: ${describeError(error)}`;
  errorLine.hidden = false;
}

function clearError() {
  errorLine.textContent = "";
  errorLine.hidden = true;
}

const NAV = [
  ["#/agents", "Agents", ["admin", "member", "viewer"]],
  ["#/bindings", "Bindings", ["admin", "member", "viewer"]],
  ["#/tasks", "Tasks", ["admin", "viewer"]],
  ["#/calls", "Calls", ["admin", "viewer"]],
  ["#/audit", "Audit log", ["admin", "viewer"]],
  ["#/members", "Members", ["admin"]],
  ["#/issuers", "Trusted issuers", ["admin", "member", "viewer"]],
  ["#/settings", "Settings", ["admin", "viewer"]],
];

function drawShell() {
  const session = getSession();
  clear(nav);
  if (!session) {
    nav.hidden = true;
    who.hidden = true;
    return;
  }
  const list = h("ul");
  for (const [href, label, roles] of NAV) {
    if (!roles.includes(session.role)) continue;
    list.append(h("li", null, h("a", { href, text: label, "data-nav": href.slice(2) })));
  }
  nav.append(list);
  nav.hidden = false;
  whoText.textContent = `Signed in as ${session.role}`;
  who.hidden = false;
  markNav();
}

function markNav() {
  const section = (location.hash.match(/^#\/([a-z]+)/) || [])[1];
  for (const a of nav.querySelectorAll("a")) {
    if (a.dataset.nav === section) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

function parseHash() {
  const raw = location.hash.replace(/^#/, "");
  const [path, query] = raw.split("?");
  const parts = (path || "").split("/").filter(Boolean).map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      return p;
    }
  });
  return { parts, query: new URLSearchParams(query || "") };
}

function runCleanups() {
  for (const fn of app.cleanups.splice(0)) {
    try {
      fn();
    } catch {
      /* closing is best effort */
    }
  }
}

async function route(options = {}) {
  runCleanups();
  if (!options.keepError) clearError();
  const token = ++app.renderToken;
  if (!getSession()) {
    // Why the last session ended stays on the sign-in page until the next sign-in, whatever
    // navigation comes first (a 401 can arrive before a hash change redraws the page).
    drawSignIn(options.reason ?? endedReason);
    return;
  }
  markNav();
  const { parts, query } = parseHash();
  const name = parts[0] || "agents";
  const page = pages[name];
  const ctx = {
    app,
    params: parts.slice(1),
    query,
    token,
    current: () => token === app.renderToken,
  };
  clear(main);
  main.append(h("p", { class: "loading", text: "Loading…" }));
  let content;
  try {
    content = page ? await page(ctx) : [h("h1", { text: "No such page" }), h("p", { text: "This address names no page of the console." })];
  } catch (error) {
    if (!ctx.current()) return;
    if (!getSession()) return; // the session ended: the sign-in page is showing
    content = errorPage(error);
  }
  if (!ctx.current()) return;
  clear(main);
  append(main, [content]);
  const heading = main.querySelector("h1");
  document.title = heading ? `${heading.textContent.slice(0, 80)} · Forgebench console` : "Forgebench console";
  if (options.focus && heading) {
    heading.setAttribute("tabindex", "-1");
    heading.focus({ preventScroll: false });
  }
}

function errorPage(error) {
  let title = "Something went wrong";
  let text = describeError(error);
  if (error instanceof ApiError) {
    if (error.status === 404) {
      title = "Not found";
      text = "This does not exist, or it is not visible to you.";
    } else if (error.status === 403) {
      title = "Not permitted";
      text = "Your role may not see this page.";
    }
  }
  showError(error);
  return [h("h1", { text: title }), h("p", { class: "page-error", text })];
}

/**
 * Whether the browser keeps no Secure cookie for this page: plain http on a host it does not
 * take as potentially trustworthy (only localhost and loopback addresses are). The session
 * cookie is `__Host-` and so Secure: the browser would drop it, and no sign-in could last.
 */
function insecureOrigin() {
  if (location.protocol !== "http:") return false;
  if (typeof window.isSecureContext === "boolean") return !window.isSecureContext;
  return !["localhost", "127.0.0.1", "[::1]"].includes(location.hostname);
}

function insecureOriginText() {
  const local = `http://localhost${location.port ? `:${location.port}` : ""}${location.pathname}`;
  return (
    `The console needs HTTPS here: this page came over plain http from ${location.hostname}, and browsers keep ` +
    "the console's session cookie (a Secure cookie) only over HTTPS, or over http on localhost. " +
    `Open the console over HTTPS, or on the gateway's own machine as ${local}. ` +
    "Signing in is off on this page, so your key is not sent in clear text."
  );
}

const COOKIE_NOT_KEPT =
  "The key was accepted, but this browser did not keep the session cookie, so the console cannot work. " +
  "The cookie is Secure: open the console over HTTPS (or over http on localhost), and allow cookies for this site.";

function drawSignIn(reason) {
  drawShell();
  clear(main);
  const insecure = insecureOrigin();
  const key = h("input", {
    type: "password",
    name: "key",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
    "aria-describedby": "key-hint",
  });
  const submit = h("button", { type: "submit", text: "Sign in" });
  const message = h("p", { class: "notice", role: "status" });
  if (insecure) {
    message.textContent = insecureOriginText();
    key.disabled = true;
    submit.disabled = true;
  } else if (reason) {
    message.textContent = reason;
  }
  const form = h(
    "form",
    { class: "sign-in", "aria-labelledby": "sign-in-title" },
    field("Member key", key),
    h("p", {
      id: "key-hint",
      class: "hint",
      text: "An admin, member or viewer key (fb_adm_…, fb_mem_…, fb_view_…). It is exchanged for a session of an hour and not kept by this page.",
    }),
    submit,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (insecure) return;
    clearError();
    submit.disabled = true;
    const value = key.value.trim();
    key.value = "";
    try {
      await signIn(value);
      // The session lives in its cookie alone: ask with it whether the browser kept it.
      if (!(await resumeSession())) {
        message.textContent = COOKIE_NOT_KEPT;
        return;
      }
      endedReason = null;
      await start();
    } catch (error) {
      if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
        // 401: an unknown or revoked key; 403: an agent's or the operator's key.
        message.textContent = `That key was not accepted: use a live admin, member or viewer key of your tenant. (${error.message})`;
      } else {
        showError(error);
      }
    } finally {
      submit.disabled = false;
    }
  });
  append(main, [h("h1", { id: "sign-in-title", text: "Sign in" }), message, form]);
  document.title = "Sign in · Forgebench console";
}

let expiryTimer = null;
let endedReason = null;

async function start() {
  const session = getSession();
  drawShell();
  clearTimeout(expiryTimer);
  const ms = Date.parse(session?.expires_at ?? "") - Date.now();
  if (ms > 0 && ms < 2 ** 31 - 1) {
    expiryTimer = setTimeout(() => sessionEnded("Your session has expired. Sign in again."), ms);
  }
  try {
    await app.loadAgents();
  } catch (error) {
    if (!getSession()) return;
    showError(error);
  }
  if (!location.hash || location.hash === "#" || location.hash === "#/") {
    history.replaceState(null, "", "#/agents");
  }
  await route();
}

function sessionEnded(reason) {
  endedReason = reason;
  forgetSession();
  app.agents = [];
  route({ reason });
}

setUnauthorizedHandler(() => {
  sessionEnded("Your session has ended (it expired or was signed out). Sign in again.");
});

document.getElementById("sign-out").addEventListener("click", async () => {
  clearError();
  try {
    await signOut();
  } catch (error) {
    showError(error);
  }
  app.agents = [];
  runCleanups();
  endedReason = "You are signed out.";
  route({ reason: endedReason, keepError: true });
});

document.getElementById("skip-link").addEventListener("click", (event) => {
  event.preventDefault();
  main.focus();
});

window.addEventListener("hashchange", () => route({ focus: true }));

(async () => {
  try {
    await resumeSession();
  } catch (error) {
    showError(error);
  }
  if (getSession()) await start();
  else route();
})();

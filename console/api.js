// The console is a client of the gateway's API: the session cookie authenticates every request,
// and every change carries the session's CSRF token, kept in memory only.

/** Everything before /console in the page's path: "" locally, "/prod" behind a stage. */
export const base = location.pathname.replace(/\/console\/?$/, "");

let session = null; // {csrf_token, expires_at, tenant_id, member_id, role}
let onUnauthorized = null;

export class ApiError extends Error {
  constructor(status, code, message, requestId) {
    super(message);
    this.status = status;
    this.code = code;
    this.requestId = requestId;
  }
}

export function getSession() {
  return session;
}

export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
}

/** A query string of the set values: qs({a: "x", b: ""}) -> "?a=x". */
export function qs(params) {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") s.set(k, String(v));
  const t = s.toString();
  return t ? `?${t}` : "";
}

/** A path segment, encoded. */
export function seg(value) {
  return encodeURIComponent(String(value));
}

async function request(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && method !== "HEAD" && session) headers["X-CSRF-Token"] = session.csrf_token;
  let res;
  try {
    res = await fetch(base + path, {
      method,
      headers,
      credentials: "same-origin",
      cache: "no-store",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, "network", "The gateway could not be reached.", null);
  }
  const text = res.status === 204 ? "" : await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const d = data && data.detail;
    const message =
      typeof d === "string" ? d : d && typeof d.message === "string" ? d.message : `HTTP ${res.status}`;
    const code = d && typeof d === "object" ? d.code ?? null : null;
    const rid = res.headers.get("x-request-id") || (d && typeof d === "object" ? d.request_id : null) || null;
    throw new ApiError(res.status, code, message, rid);
  }
  return data;
}

/** A call of the /v1 API; a 401 means the session is gone. */
export async function api(method, path, body) {
  try {
    return await request(method, path, body);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401 && session) {
      session = null;
      if (onUnauthorized) onUnauthorized(error);
    }
    throw error;
  }
}

export async function signIn(key) {
  session = await request("POST", "/console/session", { key });
  return session;
}

export async function resumeSession() {
  try {
    session = await request("GET", "/console/session");
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) session = null;
    else throw error;
  }
  return session;
}

export async function signOut() {
  try {
    await request("DELETE", "/console/session");
  } finally {
    session = null;
  }
}

export function forgetSession() {
  session = null;
}

/** The URL of a task's event stream (EventSource sends the cookie: same origin). */
export function eventsUrl(callee, id) {
  return `${base}/v1/agents/${seg(callee)}/tasks/${seg(id)}/events`;
}

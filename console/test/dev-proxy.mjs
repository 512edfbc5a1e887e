// A stand-in for the gateway's console routes, for developing the console against a gateway
// that does not serve it yet. It serves the assets at /console, keeps sessions in memory
// (cookie + CSRF token, as the gateway's contract says) and forwards /v1/... with the session's
// key as a Bearer token. Not used by test.sh against a gateway that serves /console itself.
//   UPSTREAM=http://127.0.0.1:8731 PORT=8732 node test/dev-proxy.mjs
import http from "node:http";
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import path from "node:path";

const upstream = new URL(process.env.UPSTREAM || "http://127.0.0.1:8731");
const port = Number(process.env.PORT || 8732);
const prefix = process.env.PREFIX || ""; // e.g. /prod, to try a stage prefix
const dir = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const sessions = new Map(); // id -> {key, csrf, body}

function cookieSession(req) {
  const m = /(?:^|;\s*)__Host-forgebench_session=([^;]+)/.exec(req.headers.cookie || "");
  return m ? sessions.get(m[1]) : undefined;
}

function send(res, status, body, headers = {}) {
  const text = body === undefined ? "" : typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(text);
}

async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return Buffer.concat(chunks);
}

http
  .createServer(async (req, res) => {
    const url = new URL(req.url, "http://x");
    let p = url.pathname;
    if (prefix) {
      if (!p.startsWith(prefix + "/")) return send(res, 404, { detail: { code: "not_found", message: "no such route" } });
      p = p.slice(prefix.length);
    }
    if (p === "/console" && req.method === "GET") {
      const html = await readFile(path.join(dir, "index.html"));
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "content-security-policy": CSP, "cache-control": "no-store" });
      return res.end(html);
    }
    const asset = /^\/console\/([a-z0-9-]+\.(js|css|svg))$/.exec(p);
    if (asset && req.method === "GET") {
      const type = { js: "text/javascript", css: "text/css", svg: "image/svg+xml" }[asset[2]];
      try {
        const body = await readFile(path.join(dir, asset[1]));
        res.writeHead(200, { "content-type": type + "; charset=utf-8", "content-security-policy": CSP });
        return res.end(body);
      } catch {
        return send(res, 404, { detail: { code: "not_found", message: "no such asset" } });
      }
    }
    if (p === "/console/session") {
      if (req.method === "POST") {
        let key;
        try {
          key = JSON.parse((await readBody(req)).toString()).key;
        } catch {
          return send(res, 400, { detail: { code: "invalid_request", message: "body" } });
        }
        if (typeof key !== "string" || !/^fb_(adm|mem|view)_/.test(key)) {
          return send(res, 401, { detail: { code: "unauthorized", message: "not a member key" } });
        }
        const r = await fetch(new URL("/v1/agents", upstream), { headers: { authorization: `Bearer ${key}` } });
        if (r.status === 401) return send(res, 401, { detail: { code: "unauthorized", message: "unknown key" } });
        const role = key.startsWith("fb_adm_") ? "admin" : key.startsWith("fb_mem_") ? "member" : "viewer";
        const id = randomBytes(32).toString("hex");
        const body = {
          csrf_token: randomBytes(32).toString("hex"),
          expires_at: new Date(Date.now() + 3600e3).toISOString(),
          tenant_id: "dev",
          member_id: "dev",
          role,
        };
        sessions.set(id, { key, csrf: body.csrf_token, body });
        return send(res, 201, body, {
          "set-cookie": `__Host-forgebench_session=${id}; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=3600`,
        });
      }
      const s = cookieSession(req);
      if (req.method === "GET") return s ? send(res, 200, s.body) : send(res, 401, { detail: { code: "unauthorized", message: "no session" } });
      if (req.method === "DELETE") {
        if (!s) return send(res, 401, { detail: { code: "unauthorized", message: "no session" } });
        if (req.headers["x-csrf-token"] !== s.csrf) return send(res, 403, { detail: { code: "forbidden", message: "csrf" } });
        for (const [k, v] of sessions) if (v === s) sessions.delete(k);
        res.writeHead(204, { "set-cookie": "__Host-forgebench_session=; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=0" });
        return res.end();
      }
    }
    if (p.startsWith("/v1/")) {
      const headers = { ...req.headers };
      delete headers.host;
      delete headers.cookie;
      const s = cookieSession(req);
      if (!headers.authorization && s) {
        if (!["GET", "HEAD"].includes(req.method) && req.headers["x-csrf-token"] !== s.csrf) {
          return send(res, 403, { detail: { code: "forbidden", message: "missing or wrong X-CSRF-Token" } });
        }
        headers.authorization = `Bearer ${s.key}`;
      }
      const up = http.request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: p + url.search, headers },
        (ur) => {
          res.writeHead(ur.statusCode, ur.headers);
          ur.pipe(res);
        },
      );
      up.on("error", () => send(res, 502, { detail: { code: "internal", message: "upstream" } }));
      req.pipe(up);
      return;
    }
    send(res, 404, { detail: { code: "not_found", message: "no such route" } });
  })
  .listen(port, "127.0.0.1", () => console.log(`dev proxy on :${port} -> ${upstream}`));

"""Serves one gate agent as the kit's system under test: the kit fetches
`{host}/.well-known/agent-card.json` and sends no credentials, so this proxy answers the card
with its interfaces pointed at itself and forwards every A2A request to the agent with the
caller's key. Usage: python proxy.py PORT GATE_BASE AGENT_ID CALLER_KEY."""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

PORT, GATE, AGENT, KEY = int(sys.argv[1]), sys.argv[2].rstrip("/"), sys.argv[3], sys.argv[4]
SELF = f"http://127.0.0.1:{PORT}"
CLIENT = httpx.Client(timeout=60)
HOP_BY_HOP = {"content-length", "transfer-encoding", "connection", "content-encoding"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def card(self):
        upstream = CLIENT.get(f"{GATE}/v1/agents/{AGENT}/.well-known/agent-card.json",
                              headers={"Authorization": f"Bearer {KEY}"})
        card = upstream.json()
        for interface in card.get("supportedInterfaces", []):
            jsonrpc = interface.get("protocolBinding") == "JSONRPC"
            interface["url"] = SELF + ("/jsonrpc" if jsonrpc else "")
        body = json.dumps(card).encode()
        self.send_response(upstream.status_code)
        for name in ("content-type", "cache-control", "etag", "last-modified"):
            if name in upstream.headers:
                self.send_header(name, upstream.headers[name])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def forward(self):
        if self.path.startswith("/.well-known/agent-card.json"):
            return self.card()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {name: value for name, value in self.headers.items()
                   if name.lower() not in ("host", "content-length", "authorization")}
        headers["Authorization"] = f"Bearer {KEY}"
        target = f"{GATE}/v1/agents/{AGENT}/a2a{self.path}"
        with CLIENT.stream(self.command, target, headers=headers, content=body) as upstream:
            self.send_response(upstream.status_code)
            for name, value in upstream.headers.items():
                if name.lower() not in HOP_BY_HOP:
                    self.send_header(name, value)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in upstream.iter_raw():
                if chunk:
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")

    do_GET = do_POST = do_PUT = do_DELETE = forward


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()

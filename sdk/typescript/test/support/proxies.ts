/**
 * Small local servers that stand between the SDK and the gateway (or stand in for it):
 * - a TCP proxy that breaks its first connections, before or after the request reached the gateway;
 * - an HTTP proxy that records every exchange it forwards;
 * - a scripted HTTP server that answers what a test tells it to.
 * All listen on 127.0.0.1 only.
 */

import { once } from "node:events";
import { createServer as createHttpServer, type IncomingMessage, type Server } from "node:http";
import { createConnection, createServer as createTcpServer, type AddressInfo, type Socket } from "node:net";

export type DropMode =
  /** The connection is cut at once: the request never reaches the gateway. */
  | "before-forwarding"
  /** The request is forwarded; the connection is cut when the gateway starts answering. */
  | "after-forwarding";

export interface TcpProxy {
  url: string;
  /** Connections accepted so far. */
  connections(): number;
  /** Bytes of requests the gateway received on the connections that were cut. */
  droppedRequests(): string[];
  close(): Promise<void>;
}

/** A TCP proxy to `target` that cuts its first `drops` connections as `mode` says. */
export async function startTcpProxy(target: string, mode: DropMode, drops = 1): Promise<TcpProxy> {
  const upstream = new URL(target);
  const sockets = new Set<Socket>();
  const dropped: string[] = [];
  let accepted = 0;
  const server = createTcpServer((client) => {
    accepted += 1;
    track(sockets, client);
    if (accepted > drops) return pipeThrough(client, upstream, sockets);
    if (mode === "before-forwarding") return void client.destroy();
    forwardThenCut(client, upstream, sockets, dropped);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => accepted,
    droppedRequests: () => [...dropped],
    close: () => closeTcp(server, sockets),
  };
}

function pipeThrough(client: Socket, upstream: URL, sockets: Set<Socket>): void {
  const server = track(sockets, createConnection({ host: upstream.hostname, port: Number(upstream.port) }));
  client.pipe(server).pipe(client);
  client.on("error", () => server.destroy());
  server.on("error", () => client.destroy());
}

function forwardThenCut(client: Socket, upstream: URL, sockets: Set<Socket>, dropped: string[]): void {
  const server = track(sockets, createConnection({ host: upstream.hostname, port: Number(upstream.port) }));
  let request = "";
  client.on("data", (chunk: Buffer) => {
    request += chunk.toString("latin1");
    server.write(chunk);
  });
  server.once("data", () => {
    dropped.push(request);
    client.destroy();
    server.destroy();
  });
  client.on("error", () => server.destroy());
  server.on("error", () => client.destroy());
}

function track(sockets: Set<Socket>, socket: Socket): Socket {
  sockets.add(socket);
  socket.on("close", () => sockets.delete(socket));
  return socket;
}

async function closeTcp(server: ReturnType<typeof createTcpServer>, sockets: Set<Socket>): Promise<void> {
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

export interface Exchange {
  method: string;
  /** Path and query, as the client sent them. */
  url: string;
  requestBody: unknown;
  status: number;
  responseBody: unknown;
}

export interface RecordingProxy {
  url: string;
  exchanges(): Exchange[];
  /** Resolves with the first request (method and url) that matches, when it arrives. */
  requestArrives(matches: (method: string, url: string) => boolean): Promise<void>;
  close(): Promise<void>;
}

/** An HTTP proxy to `target` that records each exchange. */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const exchanges: Exchange[] = [];
  const waiters: { matches: (method: string, url: string) => boolean; resolve: () => void }[] = [];
  const server = createHttpServer((request, response) => {
    const method = request.method ?? "GET";
    const url = request.url ?? "/";
    for (const waiter of waiters.filter((candidate) => candidate.matches(method, url))) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    void forward(target, request).then(
      ({ sent, status, text, contentType }) => {
        exchanges.push({ method, url, requestBody: parseJson(sent), status, responseBody: parseJson(text) });
        response.writeHead(status, contentType === null ? {} : { "Content-Type": contentType });
        response.end(text);
      },
      () => response.destroy(),
    );
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exchanges: () => [...exchanges],
    requestArrives: (matches) => new Promise((resolve) => waiters.push({ matches, resolve })),
    close: () => closeHttp(server),
  };
}

const FORWARDED_HEADERS = ["authorization", "content-type", "x-parent-call", "user-agent"];

async function forward(
  target: string,
  request: IncomingMessage,
): Promise<{ sent: string; status: number; text: string; contentType: string | null }> {
  const body = await readBody(request);
  const headers: Record<string, string> = {};
  for (const name of FORWARDED_HEADERS) {
    const value = request.headers[name];
    if (typeof value === "string") headers[name] = value;
  }
  const response = await fetch(target + (request.url ?? "/"), {
    method: request.method ?? "GET",
    headers,
    body: body.length === 0 ? null : body,
  });
  const text = await response.text();
  return { sent: body, status: response.status, text, contentType: response.headers.get("content-type") };
}

export interface ScriptedAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: unknown;
}

export interface ScriptedServer {
  url: string;
  /** Every request received, in order. */
  received(): ReceivedRequest[];
  close(): Promise<void>;
}

/**
 * An HTTP server that answers its requests with `script`, in order (`"drop"` cuts the
 * connection instead); after the script it repeats the last entry.
 */
export async function startScriptedServer(script: readonly (ScriptedAnswer | "drop")[]): Promise<ScriptedServer> {
  const received: ReceivedRequest[] = [];
  const server = createHttpServer((request, response) => {
    void readBody(request).then((body) => {
      received.push({
        method: request.method ?? "GET",
        url: request.url ?? "/",
        headers: request.headers,
        body: parseJson(body),
      });
      const answer = script[Math.min(received.length, script.length) - 1];
      if (answer === undefined || answer === "drop") return void request.socket.destroy();
      const text = answer.body === undefined ? "" : JSON.stringify(answer.body);
      response.writeHead(answer.status, { "Content-Type": "application/json", ...answer.headers });
      response.end(text);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received: () => [...received],
    close: () => closeHttp(server),
  };
}

async function readBody(request: IncomingMessage): Promise<string> {
  let text = "";
  for await (const chunk of request) text += (chunk as Buffer).toString("utf8");
  return text;
}

function parseJson(text: string): unknown {
  if (text.length === 0) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

async function closeHttp(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

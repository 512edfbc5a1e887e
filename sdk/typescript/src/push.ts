/**
 * Push endpoints: the same handler `serve` takes, behind the POST the gateway pushes to a push
 * agent's endpoint (docs/api.md, "Push delivery"). One core, two adapters:
 *
 * - `pushHandler(handler, options)` → `(request: Request) => Promise<Response>`, the Fetch API's
 *   shape (Deno, Bun, Cloudflare Workers, Hono, Next.js route handlers, any edge runtime);
 * - `nodePushHandler(handler, options)` → `(req, res) => void`, for `http.createServer` and
 *   Express (mounted before any body parser, or after `express.raw()`).
 *
 * Each delivery is verified before the handler sees it (`verifyDelivery`: timestamp, signature
 * against the gateway's JWKS, destination = this endpoint and agent, then the replay cache); a
 * failed check answers 401 and never runs the handler. The handler's return value is answered
 * as the `TaskResultIn` it maps to (`resultOf`), the body the pull path posts to
 * `POST /v1/agents/me/tasks/{id}/result`: the gateway applies it as it is. A handler that
 * throws answers 500, so the gateway tries the delivery again; `reply.fail(...)` fails the task.
 */

import { Agents } from "./agents.js";
import { DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS, API_KEY_VARIABLE, URL_VARIABLE, environment } from "./client.js";
import { reply, resultOf, thrownMessage } from "./reply.js";
import type { ServeHandler } from "./serve.js";
import { withTraceOf } from "./tracing.js";
import { Transport } from "./transport.js";
import type { Message, Task, TaskResultIn } from "./types.js";
import {
  DEFAULT_TOLERANCE_SECONDS,
  ReplayCache,
  WebhookVerificationError,
  fetchJwks,
  headerValue,
  verifyDelivery,
  type Delivery,
  type DeliveryHeaders,
  type Jwks,
} from "./webhooks.js";

/** The largest delivery body read (a task holds at most 4 MiB of content); larger is a 413. */
export const MAX_DELIVERY_BYTES = 16 * 1024 * 1024;

/** How long a fetched JWKS is used before it is fetched again (the gateway's signing-key cache lifetime). */
export const JWKS_MAX_AGE_SECONDS = 300;

/**
 * A signature that fails fetches the JWKS again (a rotation adds a key), at most once in this
 * many seconds: a failure sooner waits for that fetch, so forged requests cannot flood the gateway.
 */
export const JWKS_REFRESH_SECONDS = 2;

/** The `Retry-After` of a 503 answered while the gateway cannot be read (JWKS, agent, task). */
const RETRY_AFTER_SECONDS = 5;

export interface PushHandlerOptions {
  /**
   * This endpoint's URL exactly as saved on the agent (`PUT /v1/agents/{agent}/endpoint`, as
   * `GET /v1/agents/{agent}` shows it): a delivery whose `destination.url` differs is refused.
   */
  endpointUrl: string;
  /**
   * The callee agent's id (a delivery's `destination.agent_id` must be it). Default: read once
   * with `GET /v1/agents/me`, which needs the agent's key.
   */
  agentId?: string;
  /** The gateway's URL, else `FORGEBENCH_URL`: for the JWKS, the agent's id and the task. */
  baseUrl?: string;
  /**
   * The callee agent's key (`fb_agt_…`), else `FORGEBENCH_API_KEY`. With a key the adapter reads
   * the task (`GET /v1/agents/{agent}/tasks/{id}`), so the handler gets the `Task` `serve` would
   * claim (its history, context and caller); without one (a static `jwks` and an `agentId`) it
   * builds the task from the delivery's body alone and makes no request at all.
   */
  apiKey?: string;
  /**
   * A JWKS to verify with, used as it is (never fetched nor refreshed). Default: the gateway's
   * (`fetchJwks`), cached `JWKS_MAX_AGE_SECONDS` and fetched again when a signature fails.
   */
  jwks?: Jwks;
  /** How far `webhook-timestamp` may be from the clock, either way. Default 300. */
  toleranceSeconds?: number;
  /**
   * Refuses a `webhook-id` already handled. Default: one of the adapter's own, in memory (one per
   * process or isolate). An id whose handler threw is forgotten, so the gateway's retry runs.
   */
  replayCache?: ReplayCache;
  /**
   * Told of what went wrong: a refused delivery (a `WebhookVerificationError`), a handler that
   * threw (with its task), the gateway unreachable. Default: one line on stderr.
   */
  onError?: (error: unknown, task: Task | undefined) => void;
}

/** The Fetch API adapter's shape. */
export type PushFetchHandler = (request: Request) => Promise<Response>;

/**
 * What `nodePushHandler` reads of a request: Node's `IncomingMessage` (and Express's `Request`).
 * A `body` already set (by `express.raw()`) is used when it is bytes or text.
 */
export interface NodePushRequest extends AsyncIterable<unknown> {
  method?: string | undefined;
  headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  body?: unknown;
}

/** What `nodePushHandler` writes to: Node's `ServerResponse` (and Express's `Response`). */
export interface NodePushResponse {
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  end(chunk?: string): unknown;
}

/** The Node adapter's shape: a `http.createServer` listener, an Express handler. */
export type NodePushHandler = (request: NodePushRequest, response: NodePushResponse) => void;

/** One answer of the core, before an adapter writes it. */
interface PushAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A push endpoint for the Fetch API: `(request: Request) => Promise<Response>`. It never
 * rejects: every outcome is a response (200 with the answer, 401, 405, 413, 500, 503).
 */
export function pushHandler(handler: ServeHandler, options: PushHandlerOptions): PushFetchHandler {
  const endpoint = new PushEndpoint(handler, options);
  return async (request) => {
    const answer = await endpoint.answer(request.method, request.headers, () => fetchBody(request));
    return new Response(answer.body, { status: answer.status, headers: answer.headers });
  };
}

/**
 * A push endpoint for Node's `http` and Express: `(req, res) => void`. It reads the raw body
 * itself (the signature covers the bytes as sent), so mount it before `express.json()`, or
 * after `express.raw({ type: "*\/*" })`.
 */
export function nodePushHandler(handler: ServeHandler, options: PushHandlerOptions): NodePushHandler {
  const endpoint = new PushEndpoint(handler, options);
  return (request, response) => {
    void endpoint
      .answer(request.method ?? "GET", request.headers, () => nodeBody(request))
      .then((answer) => {
        response.statusCode = answer.status;
        for (const [name, value] of Object.entries(answer.headers)) response.setHeader(name, value);
        response.end(answer.body);
      })
      .catch((error: unknown) => endpoint.report(error, undefined));
  };
}

/** The body was not the bytes as sent (a body parser ran first); the delivery cannot be verified. */
class BodyUnavailableError extends Error {}

/** The body passed `MAX_DELIVERY_BYTES`. */
const TOO_LARGE = Symbol("too large");

type BodyReader = () => Promise<Uint8Array | typeof TOO_LARGE>;

/** The core both adapters share: verify, build the task, run the handler, answer. */
class PushEndpoint {
  readonly #handler: ServeHandler;
  readonly #endpointUrl: string;
  readonly #toleranceSeconds: number;
  readonly #replayCache: ReplayCache;
  readonly #keys: JwksSource;
  readonly #agents: Agents | undefined;
  readonly #onError: NonNullable<PushHandlerOptions["onError"]>;
  #agentId: Promise<string> | undefined;

  constructor(handler: ServeHandler, options: PushHandlerOptions) {
    if (typeof handler !== "function") throw new TypeError("the push handler must be a function (task, reply)");
    if (typeof options.endpointUrl !== "string" || options.endpointUrl.length === 0) {
      throw new TypeError("endpointUrl must be this endpoint's URL as saved on the agent");
    }
    const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
    if (!(tolerance > 0) || !Number.isFinite(tolerance)) throw new RangeError("toleranceSeconds must be more than 0");
    const baseUrl = options.baseUrl ?? environment(URL_VARIABLE);
    const apiKey = options.apiKey ?? environment(API_KEY_VARIABLE);
    const gateway = baseUrl !== undefined && baseUrl.length > 0 && apiKey !== undefined && apiKey.length > 0
      ? { baseUrl, apiKey }
      : undefined;
    if (gateway === undefined && (options.jwks === undefined || options.agentId === undefined)) {
      throw new TypeError(
        `a push handler needs a baseUrl and the agent's apiKey (or set ${URL_VARIABLE} and ${API_KEY_VARIABLE}), ` +
          "or else both a jwks and an agentId",
      );
    }
    this.#handler = handler;
    this.#endpointUrl = options.endpointUrl;
    this.#toleranceSeconds = tolerance;
    this.#replayCache = options.replayCache ?? new ReplayCache(tolerance);
    this.#onError = options.onError ?? warn;
    this.#keys =
      options.jwks !== undefined
        ? new JwksSource(async () => options.jwks as Jwks, false)
        : new JwksSource(() => fetchJwks(gateway as { baseUrl: string; apiKey: string }), true);
    this.#agents =
      gateway === undefined
        ? undefined
        : new Agents(new Transport({ ...gateway, maxRetries: DEFAULT_MAX_RETRIES, timeoutMs: DEFAULT_TIMEOUT_MS }));
    if (options.agentId !== undefined) this.#agentId = Promise.resolve(options.agentId);
  }

  /** Told of trouble; what `onError` throws is dropped. */
  report(error: unknown, task: Task | undefined): void {
    try {
      this.#onError(error, task);
    } catch {
      // the report is advice
    }
  }

  /** One request's answer; never throws. */
  async answer(method: string, headers: DeliveryHeaders, readBody: BodyReader): Promise<PushAnswer> {
    try {
      return await this.#answer(method, headers, readBody);
    } catch (error) {
      this.report(error, undefined);
      return problem(500, "internal", "the push endpoint failed");
    }
  }

  async #answer(method: string, headers: DeliveryHeaders, readBody: BodyReader): Promise<PushAnswer> {
    if (method.toUpperCase() !== "POST") {
      return { ...problem(405, "method_not_allowed", "a push endpoint takes POST"), headers: { ...JSON_TYPE, Allow: "POST" } };
    }
    let body: Uint8Array | typeof TOO_LARGE;
    try {
      body = await readBody();
    } catch (error) {
      this.report(error, undefined);
      return problem(500, "internal", error instanceof BodyUnavailableError ? error.message : "the body could not be read");
    }
    if (body === TOO_LARGE) return problem(413, "too_large", `a delivery is at most ${MAX_DELIVERY_BYTES} bytes`);

    let jwks: Jwks;
    let agentId: string;
    try {
      [jwks, agentId] = await Promise.all([this.#keys.current(), this.#ownId()]);
    } catch (error) {
      this.report(error, undefined);
      return unavailable("the gateway's keys or this agent could not be read");
    }

    let delivery: Delivery;
    try {
      delivery = await this.#verified(headers, body, jwks, agentId);
    } catch (error) {
      this.report(error, undefined);
      if (error instanceof WebhookVerificationError) return problem(401, "unauthenticated", error.message);
      return unavailable("the gateway's keys could not be read");
    }
    // verifyDelivery remembered the id; forgotten again when the delivery is not answered
    const webhookId = (headerValue(headers, "webhook-id") ?? "").trim();

    let task: Task;
    try {
      task = this.#agents === undefined ? deliveredTask(delivery) : await this.#agents.getTask(agentId, delivery.task_id);
    } catch (error) {
      this.#replayCache.forget(webhookId);
      this.report(error, undefined);
      return unavailable("the task could not be read");
    }

    let answer: string;
    try {
      // in the trace the delivery's POST is in, when the application has OpenTelemetry
      const carrier = { traceparent: headerValue(headers, "traceparent"), tracestate: headerValue(headers, "tracestate") };
      const result: TaskResultIn = resultOf(await withTraceOf(carrier, async () => this.#handler(task, reply)));
      answer = JSON.stringify(result);
    } catch (error) {
      this.#replayCache.forget(webhookId);
      this.report(error, task);
      return problem(500, "handler_failed", "the handler failed; the gateway will try again");
    }
    return { status: 200, headers: JSON_TYPE, body: answer };
  }

  /** The delivery, verified; a failed signature fetches the JWKS again (`JwksSource.refreshed`) and checks once more. */
  async #verified(headers: DeliveryHeaders, body: Uint8Array, jwks: Jwks, agentId: string): Promise<Delivery> {
    const check = (keys: Jwks): Delivery =>
      verifyDelivery({
        headers,
        body,
        jwks: keys,
        url: this.#endpointUrl,
        agentId,
        toleranceSeconds: this.#toleranceSeconds,
        replayCache: this.#replayCache,
      });
    try {
      return check(jwks);
    } catch (error) {
      if (!(error instanceof WebhookVerificationError) || error.reason !== "signature") throw error;
      const refresh = this.#keys.refreshed();
      if (refresh === null) throw error;
      return check(await refresh);
    }
  }

  #ownId(): Promise<string> {
    this.#agentId ??= (this.#agents as Agents)
      .me()
      .then((agent) => agent.id)
      .catch((error: unknown) => {
        this.#agentId = undefined;
        throw error;
      });
    return this.#agentId;
  }
}

/**
 * The gateway's JWKS, cached; fetched again when old, or when a signature fails: then always
 * after the request came (so a key published just before it is found), at most once every
 * `JWKS_REFRESH_SECONDS` (requests that fail meanwhile wait for that one fetch).
 */
class JwksSource {
  readonly #load: () => Promise<Jwks>;
  readonly #refreshable: boolean;
  #jwks: Jwks | undefined;
  #fetchedAt = 0;
  #startedAt = Number.NEGATIVE_INFINITY;
  #loading: Promise<Jwks> | undefined;
  #refreshing: Promise<Jwks> | undefined;

  constructor(load: () => Promise<Jwks>, refreshable: boolean) {
    this.#load = load;
    this.#refreshable = refreshable;
  }

  /** The set to verify with: the cached one, fetched again past its age (a failed fetch keeps the old set). */
  async current(): Promise<Jwks> {
    if (this.#jwks !== undefined && (!this.#refreshable || Date.now() - this.#fetchedAt < JWKS_MAX_AGE_SECONDS * 1000)) {
      return this.#jwks;
    }
    try {
      return await this.#fetch();
    } catch (error) {
      if (this.#jwks !== undefined) return this.#jwks;
      throw error;
    }
  }

  /** A set fetched after this call, or `null` when the set is static. */
  refreshed(): Promise<Jwks> | null {
    if (!this.#refreshable) return null;
    this.#refreshing ??= (async () => {
      const pause = this.#startedAt + JWKS_REFRESH_SECONDS * 1000 - Date.now();
      if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
      if (this.#loading !== undefined) await this.#loading.catch(() => undefined);
      return this.#fetch();
    })().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  /** One fetch at a time: requests that need the set meanwhile share it. */
  #fetch(): Promise<Jwks> {
    if (this.#loading !== undefined) return this.#loading;
    this.#startedAt = Date.now();
    this.#loading = this.#load()
      .then((jwks) => {
        this.#jwks = jwks;
        this.#fetchedAt = Date.now();
        return jwks;
      })
      .finally(() => {
        this.#loading = undefined;
      });
    return this.#loading;
  }
}

/**
 * The task as far as a delivery's body tells it (no key to read it with): its id, `call_id`,
 * the callee, and the newest message as `input.message` and `history`; the caller and the
 * conversation are unknown (`""`), and so is the skill (`null`); `status` is `working`.
 */
function deliveredTask(delivery: Delivery): Task {
  const message = delivery.message as Message;
  const now = new Date().toISOString();
  return {
    id: delivery.task_id,
    context_id: "",
    caller_agent_id: "",
    callee_agent_id: delivery.destination.agent_id,
    status: { state: "working", message: null, timestamp: now },
    input: { message },
    artifacts: [],
    error: null,
    history: [message],
    call_id: typeof delivery.call_id === "string" ? delivery.call_id : null,
    parent_call_id: null,
    root_call_id: null,
    skill: null,
    delivery: "push",
    created_at: now,
    updated_at: now,
  };
}

const JSON_TYPE: Record<string, string> = { "Content-Type": "application/json" };

function problem(status: number, code: string, message: string): PushAnswer {
  return { status, headers: JSON_TYPE, body: JSON.stringify({ detail: { code, message } }) };
}

function unavailable(message: string): PushAnswer {
  const answer = problem(503, "unavailable", message);
  return { ...answer, headers: { ...answer.headers, "Retry-After": String(RETRY_AFTER_SECONDS) } };
}

/** A Fetch API request's body, read up to `MAX_DELIVERY_BYTES`. */
async function fetchBody(request: Request): Promise<Uint8Array | typeof TOO_LARGE> {
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > MAX_DELIVERY_BYTES) return TOO_LARGE;
  if (request.body === null) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_DELIVERY_BYTES) {
      await reader.cancel().catch(() => undefined);
      return TOO_LARGE;
    }
    chunks.push(value);
  }
  return concat(chunks, size);
}

/** A Node request's body: bytes a body parser kept, or the stream, read up to `MAX_DELIVERY_BYTES`. */
async function nodeBody(request: NodePushRequest): Promise<Uint8Array | typeof TOO_LARGE> {
  const kept = request.body;
  if (kept instanceof Uint8Array) return kept.byteLength > MAX_DELIVERY_BYTES ? TOO_LARGE : kept;
  if (typeof kept === "string") return new TextEncoder().encode(kept);
  if (kept !== undefined && kept !== null) {
    throw new BodyUnavailableError(
      "the request's body was parsed before the push handler: the signature covers the raw bytes, " +
        "so mount it before express.json() (or use express.raw())",
    );
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of request) {
    const bytes = typeof chunk === "string" ? new TextEncoder().encode(chunk) : (chunk as Uint8Array);
    size += bytes.byteLength;
    // past the bound the rest is read and dropped, so that the 413 can still be written
    if (size <= MAX_DELIVERY_BYTES) chunks.push(bytes);
  }
  return size > MAX_DELIVERY_BYTES ? TOO_LARGE : concat(chunks, size);
}

function concat(chunks: readonly Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const joined = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    joined.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return joined;
}

function warn(error: unknown, task: Task | undefined): void {
  const where =
    error instanceof WebhookVerificationError
      ? "refused a delivery"
      : task === undefined
        ? "answering a delivery"
        : `handling task ${task.id}`;
  console.warn(`forgebench push: ${where}: ${thrownMessage(error)}`);
}

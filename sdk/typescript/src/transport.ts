/**
 * One place that talks HTTP: the key header, JSON in and out, timeouts, and retries with backoff
 * for what may safely be tried again. The same rules in every Forgebench SDK (docs/sdks.md):
 *
 * - 429 and 503 said "nothing was done": any request is sent again, after `Retry-After` when the
 *   answer has one (up to 30 s; a longer one is not waited for: the error is thrown), else after
 *   the backoff. So is an open refused with 429 `quota_exceeded` (past its binding's contract):
 *   it opened nothing, and its `message_id` would make a repeat answer with the first task anyway.
 * - A 502 or 504 (a proxy's), or an attempt that got no response, may have reached the gateway:
 *   only a request that is safe to repeat goes again (`repeatable`: a GET, PUT or DELETE, a
 *   cancel, or a POST whose message carries a `message_id`). A connection that never opened is
 *   retried for any request.
 * - A 401 whose `WWW-Authenticate` says `error="invalid_token"`, for a client that signs in with
 *   a token provider: the provider is asked for a new token and the request sent once more (a
 *   refused request did nothing), not counted against `maxRetries`.
 * - Anything else (4xx, 500) is thrown at once.
 */

import { ConnectionError, ForgebenchError, errorForResponse, REQUEST_ID_HEADERS } from "./errors.js";
import { abortableSleep, backoffDelayMs } from "./backoff.js";
import { KeyCredential, saysInvalidToken, type Credential } from "./auth.js";
import { outgoingTraceHeaders } from "./tracing.js";

export const SDK_VERSION = "0.1.0";

export interface TransportSettings {
  baseUrl: string;
  /** A key, or where each request's credential comes from (a token provider's tokens). */
  apiKey?: string;
  credential?: Credential;
  /** Attempts after the first one, for a request that got no response or a retryable status. */
  maxRetries: number;
  /** How long one attempt may take, on top of the seconds the gateway may hold a long poll. */
  timeoutMs: number;
}

export type QueryValue = string | number | undefined;

export interface RequestSpec {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** The path, its segments already encoded. */
  path: string;
  query?: Readonly<Record<string, QueryValue>>;
  body?: unknown;
  headers?: Readonly<Record<string, string>>;
  /** Seconds the gateway may hold this request before answering (`wait`). */
  waitSeconds?: number;
  signal?: AbortSignal;
  /**
   * Safe to send again after an attempt that may have reached the gateway (no response, a 502
   * or 504): the gateway makes a repeat harmless. Default: true for GET, PUT and DELETE.
   */
  repeatable?: boolean;
  /** Told when an attempt got no response and another follows (the lost one may have landed). */
  onLostAttempt?: () => void;
}

export interface ApiResponse {
  status: number;
  /** The parsed JSON body; `null` for an empty body (a 204). */
  body: unknown;
}

/** Statuses that say "nothing was done, try again": too many polls, the gateway unavailable. */
const NOTHING_DONE_STATUSES: ReadonlySet<number> = new Set([429, 503]);
/** A proxy's statuses: the request may have reached the gateway; only a repeatable one goes again. */
const GATEWAY_STATUSES: ReadonlySet<number> = new Set([502, 504]);

/** Longest pause a `Retry-After` header may ask for; a longer one is not waited for. */
export const MAX_RETRY_AFTER_MS = 30_000;

/** Error codes of a connection that never opened: nothing was sent, any request may go again. */
const NEVER_SENT_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "UND_ERR_CONNECT_TIMEOUT",
]);

type Attempt =
  | { kind: "accepted"; status: number; body: unknown }
  | { kind: "streaming"; response: Response }
  | {
      kind: "response";
      status: number;
      body: unknown;
      retryAfterSeconds: number | undefined;
      requestId: string | undefined;
      /** The credential this attempt sent, and whether the gateway refused it as an invalid token. */
      credential: string;
      invalidToken: boolean;
    }
  | { kind: "no-response"; error: unknown };

/** A stream the gateway accepted: its body, to read to the end (or cancel). */
export interface ApiStream {
  status: number;
  body: ReadableStream<Uint8Array>;
}

export class Transport {
  readonly #settings: Omit<TransportSettings, "apiKey" | "credential">;
  readonly #credential: Credential;

  constructor(settings: TransportSettings) {
    const { apiKey, credential, ...rest } = settings;
    if ((apiKey === undefined) === (credential === undefined)) throw new TypeError("a transport needs either a key or a credential");
    this.#credential = credential ?? new KeyCredential(apiKey as string);
    this.#settings = { ...rest, baseUrl: settings.baseUrl.replace(/\/+$/, "") };
  }

  /** Sends the request, retrying as described above; a refusal throws its typed error. */
  async request(spec: RequestSpec): Promise<ApiResponse> {
    const accepted = await this.#send(spec, false);
    if (accepted.kind === "streaming") throw new TypeError("unreachable: a buffered request got a stream");
    return { status: accepted.status, body: accepted.body };
  }

  /**
   * Opens a streamed answer (`text/event-stream`): retried like `request` until the gateway
   * accepts it; the timeout covers only the wait for the response's head, never the stream.
   */
  async stream(spec: RequestSpec): Promise<ApiStream> {
    const accepted = await this.#send(spec, true);
    if (accepted.kind !== "streaming") throw new ForgebenchError("the gateway answered a stream with no body", accepted.status, accepted.body);
    const response = accepted.response;
    if (response.body === null) throw new ForgebenchError("the gateway answered a stream with no body", response.status, null);
    return { status: response.status, body: response.body };
  }

  async #send(
    spec: RequestSpec,
    streaming: boolean,
  ): Promise<Extract<Attempt, { kind: "accepted" | "streaming" }>> {
    const repeatable = spec.repeatable ?? (spec.method === "GET" || spec.method === "PUT" || spec.method === "DELETE");
    let renewed = false;
    for (let retry = 0; ; retry++) {
      const attempt = await this.#attempt(spec, streaming);
      const last = retry >= this.#settings.maxRetries;
      if (attempt.kind === "no-response") {
        if (last || !(repeatable || neverSent(attempt.error))) throw connectionError(spec, attempt.error);
        spec.onLostAttempt?.();
        await abortableSleep(backoffDelayMs(retry), spec.signal);
        continue;
      }
      if (attempt.kind === "accepted" || attempt.kind === "streaming") return attempt;
      // a refused token did nothing: once, a new one, and the same request again
      if (attempt.invalidToken && !renewed && this.#credential.refused(attempt.credential)) {
        renewed = true;
        retry--;
        continue;
      }
      const error = errorForResponse(attempt.status, attempt.body, attempt.retryAfterSeconds, attempt.requestId);
      const delay = last ? undefined : retryDelayMs(attempt.status, retry, attempt.retryAfterSeconds, repeatable);
      if (delay === undefined) throw error;
      await abortableSleep(delay, spec.signal);
    }
  }

  async #attempt(spec: RequestSpec, streaming: boolean): Promise<Attempt> {
    // before the attempt's timeout starts; what a token provider throws reaches the caller as it is
    const credential = await this.#credential.current();
    spec.signal?.throwIfAborted();
    const limitMs = this.#settings.timeoutMs + (spec.waitSeconds ?? 0) * 1000;
    // A stream's timeout ends once its head has come: the stream itself may last minutes.
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new DOMException("the request timed out", "TimeoutError")), limitMs);
    const signal = spec.signal === undefined ? timeout.signal : AbortSignal.any([spec.signal, timeout.signal]);
    try {
      // the application's OpenTelemetry context, when it has one: its trace continues
      const traced = await outgoingTraceHeaders();
      const response = await fetch(this.#url(spec), {
        method: spec.method,
        headers: this.#headers(spec, streaming, credential, traced),
        body: spec.body === undefined ? null : JSON.stringify(spec.body),
        signal,
      });
      if (response.status < 400 && streaming && response.status !== 204) {
        clearTimeout(timer);
        return { kind: "streaming", response };
      }
      const body = parseBody(await response.text());
      return response.status < 400
        ? { kind: "accepted", status: response.status, body }
        : {
            kind: "response",
            status: response.status,
            body,
            retryAfterSeconds: retryAfterSeconds(response.headers.get("retry-after")),
            requestId: requestIdOf(response.headers),
            credential,
            invalidToken: response.status === 401 && saysInvalidToken(response.headers.get("www-authenticate")),
          };
    } catch (error) {
      spec.signal?.throwIfAborted();
      return { kind: "no-response", error };
    } finally {
      clearTimeout(timer);
    }
  }

  #url(spec: RequestSpec): string {
    const url = new URL(this.#settings.baseUrl + spec.path);
    for (const [name, value] of Object.entries(spec.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    return url.toString();
  }

  #headers(
    spec: RequestSpec,
    streaming: boolean,
    credential: string,
    traced: Record<string, string>,
  ): Record<string, string> {
    const headers: Record<string, string> = {
      Authorization: `Bearer ${credential}`,
      Accept: streaming ? "text/event-stream" : "application/json",
      "User-Agent": `forgebench-sdk-typescript/${SDK_VERSION}`,
      ...traced,
      ...spec.headers,
    };
    if (spec.body !== undefined) headers["Content-Type"] = "application/json";
    return headers;
  }
}

/** The JSON of a body, the text itself when it is not JSON, `null` when empty. */
function parseBody(text: string): unknown {
  if (text.length === 0) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** Seconds of a `Retry-After` of whole or fractional seconds; undefined otherwise (an HTTP date). */
function retryAfterSeconds(header: string | null): number | undefined {
  if (header === null || !/^\d+(\.\d+)?$/.test(header.trim())) return undefined;
  return Number(header.trim());
}

function requestIdOf(headers: Headers): string | undefined {
  for (const name of REQUEST_ID_HEADERS) {
    const value = headers.get(name);
    if (value !== null && value.length > 0) return value;
  }
  return undefined;
}

/** The pause before retry number `retry` after `status`, or undefined to throw its error. */
function retryDelayMs(status: number, retry: number, retryAfter: number | undefined, repeatable: boolean): number | undefined {
  if (NOTHING_DONE_STATUSES.has(status)) {
    if (retryAfter === undefined) return backoffDelayMs(retry);
    const ms = retryAfter * 1000;
    return ms <= MAX_RETRY_AFTER_MS ? ms : undefined;
  }
  if (GATEWAY_STATUSES.has(status) && repeatable) return backoffDelayMs(retry);
  return undefined;
}

/** Whether an attempt failed before its connection opened (refused, no such host, connect timeout). */
function neverSent(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 4; cause = cause.cause, depth++) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string" && NEVER_SENT_CODES.has(code)) return true;
  }
  return false;
}

function connectionError(spec: RequestSpec, cause: unknown): ForgebenchError {
  const reason = cause instanceof Error ? describeCause(cause) : String(cause);
  return new ConnectionError(`${spec.method} ${spec.path}: no response (${reason})`, cause);
}

/** fetch's own message is "fetch failed"; the reason (ECONNRESET, ...) is on its cause. */
function describeCause(error: Error): string {
  const cause: unknown = error.cause;
  if (cause instanceof Error) return `${error.message}: ${cause.message}`;
  return error.message;
}

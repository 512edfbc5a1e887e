/**
 * One place that talks HTTP: the key header, JSON in and out, timeouts, and retries with backoff
 * for what may safely be tried again (no response at all, 429 and 502/503/504).
 */

import { ConnectionError, errorForResponse, type ForgebenchError } from "./errors.js";
import { abortableSleep, backoffDelayMs } from "./backoff.js";

export const SDK_VERSION = "0.1.0";

export interface TransportSettings {
  baseUrl: string;
  apiKey: string;
  /** Attempts after the first one, for a request that got no response or a retryable status. */
  maxRetries: number;
  /** How long one attempt may take, on top of the seconds the gateway may hold a long poll. */
  timeoutMs: number;
}

export type QueryValue = string | number | undefined;

export interface RequestSpec {
  method: "GET" | "POST";
  /** The path, its segments already encoded. */
  path: string;
  query?: Readonly<Record<string, QueryValue>>;
  body?: unknown;
  headers?: Readonly<Record<string, string>>;
  /** Seconds the gateway may hold this request before answering (`wait`). */
  waitSeconds?: number;
  signal?: AbortSignal;
  /** Told when an attempt got no response and another follows (the lost one may have landed). */
  onLostAttempt?: () => void;
}

export interface ApiResponse {
  status: number;
  /** The parsed JSON body; `null` for an empty body (a 204). */
  body: unknown;
}

/** Statuses that say "nothing happened, try again": too many polls, and the gateway unavailable. */
const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

/** Longest pause a `Retry-After` header may ask for before the next attempt. */
const MAX_RETRY_AFTER_MS = 30_000;

type Attempt =
  | { kind: "response"; status: number; body: unknown; retryAfterSeconds: number | undefined }
  | { kind: "no-response"; error: unknown };

export class Transport {
  readonly #settings: TransportSettings;

  constructor(settings: TransportSettings) {
    this.#settings = { ...settings, baseUrl: settings.baseUrl.replace(/\/+$/, "") };
  }

  /** Sends the request, retrying as described above; a refusal throws its typed error. */
  async request(spec: RequestSpec): Promise<ApiResponse> {
    for (let retry = 0; ; retry++) {
      const attempt = await this.#attempt(spec);
      const last = retry >= this.#settings.maxRetries;
      if (attempt.kind === "no-response") {
        if (last) throw connectionError(spec, attempt.error);
        spec.onLostAttempt?.();
        await abortableSleep(backoffDelayMs(retry), spec.signal);
        continue;
      }
      if (attempt.status < 400) return { status: attempt.status, body: attempt.body };
      const error = errorForResponse(attempt.status, attempt.body, attempt.retryAfterSeconds);
      if (last || !RETRYABLE_STATUSES.has(attempt.status)) throw error;
      await abortableSleep(retryDelayMs(retry, attempt.retryAfterSeconds), spec.signal);
    }
  }

  async #attempt(spec: RequestSpec): Promise<Attempt> {
    const timeout = AbortSignal.timeout(this.#settings.timeoutMs + (spec.waitSeconds ?? 0) * 1000);
    const signal = spec.signal === undefined ? timeout : AbortSignal.any([spec.signal, timeout]);
    try {
      const response = await fetch(this.#url(spec), {
        method: spec.method,
        headers: this.#headers(spec),
        body: spec.body === undefined ? null : JSON.stringify(spec.body),
        signal,
      });
      const body = parseBody(await response.text());
      return {
        kind: "response",
        status: response.status,
        body,
        retryAfterSeconds: retryAfterSeconds(response.headers.get("retry-after")),
      };
    } catch (error) {
      spec.signal?.throwIfAborted();
      return { kind: "no-response", error };
    }
  }

  #url(spec: RequestSpec): string {
    const url = new URL(this.#settings.baseUrl + spec.path);
    for (const [name, value] of Object.entries(spec.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    return url.toString();
  }

  #headers(spec: RequestSpec): Record<string, string> {
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.#settings.apiKey}`,
      Accept: "application/json",
      "User-Agent": `forgebench-sdk-typescript/${SDK_VERSION}`,
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

function retryAfterSeconds(header: string | null): number | undefined {
  if (header === null || !/^\d+$/.test(header.trim())) return undefined;
  return Number(header.trim());
}

function retryDelayMs(retry: number, retryAfter: number | undefined): number {
  if (retryAfter === undefined) return backoffDelayMs(retry);
  return Math.min(retryAfter * 1000, MAX_RETRY_AFTER_MS);
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

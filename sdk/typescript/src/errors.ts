/**
 * Errors the SDK throws. Every one is a `ForgebenchError`; a refusal from the gateway is one of
 * the status classes below and carries the HTTP `status` and the response `body` as the gateway
 * sent it (parsed JSON when it was JSON, the text otherwise).
 */

/** An error body's `detail`: a sentence, or `{code, message?, state?, ...}`. */
export type ErrorDetail =
  | string
  | { code: string; message?: string; state?: string; [field: string]: unknown };

/** The gateway's error body: `{"detail": ...}`. */
export interface ErrorBody {
  detail: ErrorDetail;
}

/** The base of every error this SDK throws. `status` is 0 when no HTTP response came. */
export class ForgebenchError extends Error {
  readonly status: number;
  readonly body: unknown;

  constructor(message: string, status: number, body: unknown, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.status = status;
    this.body = body;
  }

  /** `detail.code` of the body (`not_permitted`, `task_not_working`, ...), if it has one. */
  get code(): string | undefined {
    const detail = errorDetail(this.body);
    return typeof detail === "object" ? detail.code : undefined;
  }

  /** The body's `detail`, if the body is the gateway's error shape. */
  get detail(): ErrorDetail | undefined {
    return errorDetail(this.body);
  }
}

/** No response: the connection failed, dropped or timed out on every attempt. */
export class ConnectionError extends ForgebenchError {
  constructor(message: string, cause: unknown) {
    super(message, 0, null, { cause });
  }
}

/** 400 `invalid_request`: the request was malformed or broke a limit. */
export class BadRequestError extends ForgebenchError {}

/** 401 `unauthenticated`: the key is missing, unknown or revoked. */
export class AuthenticationError extends ForgebenchError {}

/**
 * 403: `not_permitted` when a task may not be opened on that callee (no binding, pending,
 * revoked, unknown callee, paused or retired callee — all the same body), or `forbidden` when
 * the key may not do this (a paused agent's key, the callee canceling, ...).
 */
export class PermissionDeniedError extends ForgebenchError {}

/** 404: `{"detail":"task not found"}` for tasks, `not_found` otherwise. */
export class NotFoundError extends ForgebenchError {}

/** 409: `task_not_working` (with the task's `state`), `limit_reached` or `conflict`. */
export class ConflictError extends ForgebenchError {
  /** The task's state a `task_not_working` refusal reports (`canceled`, `completed`, ...). */
  get state(): string | undefined {
    const detail = this.detail;
    return typeof detail === "object" && typeof detail.state === "string" ? detail.state : undefined;
  }
}

/** 413 `too_large`: the write would take the task past its content bound. */
export class PayloadTooLargeError extends ForgebenchError {}

/** 422: a pull result said `working`. */
export class UnprocessableEntityError extends ForgebenchError {}

/** 429 `too_many_requests`: too many long polls at once; `retryAfterSeconds` from the header. */
export class RateLimitError extends ForgebenchError {
  readonly retryAfterSeconds: number | undefined;

  constructor(message: string, status: number, body: unknown, retryAfterSeconds: number | undefined) {
    super(message, status, body);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** 503 `unavailable`: a backing service failed; nothing was written. */
export class ServiceUnavailableError extends ForgebenchError {}

type StatusErrorClass = new (message: string, status: number, body: unknown) => ForgebenchError;

const ERROR_CLASS_BY_STATUS: ReadonlyMap<number, StatusErrorClass> = new Map<number, StatusErrorClass>([
  [400, BadRequestError],
  [401, AuthenticationError],
  [403, PermissionDeniedError],
  [404, NotFoundError],
  [409, ConflictError],
  [413, PayloadTooLargeError],
  [422, UnprocessableEntityError],
  [503, ServiceUnavailableError],
]);

/** The typed error for a refused request (any status the table lacks is a plain `ForgebenchError`). */
export function errorForResponse(
  status: number,
  body: unknown,
  retryAfterSeconds: number | undefined,
): ForgebenchError {
  const message = `${status}: ${describeBody(body)}`;
  if (status === 429) return new RateLimitError(message, status, body, retryAfterSeconds);
  const ErrorClass = ERROR_CLASS_BY_STATUS.get(status) ?? ForgebenchError;
  return new ErrorClass(message, status, body);
}

function errorDetail(body: unknown): ErrorDetail | undefined {
  if (typeof body !== "object" || body === null || !("detail" in body)) return undefined;
  const detail: unknown = body.detail;
  if (typeof detail === "string") return detail;
  if (typeof detail === "object" && detail !== null && "code" in detail && typeof detail.code === "string") {
    return detail as ErrorDetail;
  }
  return undefined;
}

/** A one-line summary of an error body for the error's message. */
function describeBody(body: unknown): string {
  const detail = errorDetail(body);
  if (typeof detail === "string") return detail;
  if (detail !== undefined) {
    const extra = detail.message ?? (detail.state === undefined ? undefined : `state ${detail.state}`);
    return extra === undefined ? detail.code : `${detail.code}: ${extra}`;
  }
  if (typeof body === "string" && body.length > 0) return body.slice(0, 200);
  return "the gateway refused the request";
}

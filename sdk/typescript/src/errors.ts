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

/** Response headers that name the request, in the order `requestId` falls back to them. */
export const REQUEST_ID_HEADERS: readonly string[] = ["x-request-id", "x-amzn-requestid", "apigw-requestid"];

/** What else an error may carry: its cause, and the request id a response header gave. */
export interface ForgebenchErrorOptions {
  cause?: unknown;
  /** The request id of a response header (`X-Request-Id`), for a body that has none. */
  headerRequestId?: string | undefined;
}

/**
 * The base of every error this SDK throws. `status` is 0 when no HTTP response came. The class
 * of each status has the same name in every Forgebench SDK (see docs/sdks.md).
 */
export class ForgebenchError extends Error {
  readonly status: number;
  readonly body: unknown;
  readonly #headerRequestId: string | undefined;

  constructor(message: string, status: number, body: unknown, options?: ForgebenchErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.status = status;
    this.body = body;
    this.#headerRequestId = options?.headerRequestId;
  }

  /**
   * The gateway's id of the failed request, to quote when asking its operators: the body's
   * `detail.request_id`, else the `X-Request-Id` header (every gateway response has one, also
   * the four exact bodies that carry no id), or API Gateway's own when a proxy answered.
   */
  get requestId(): string | undefined {
    if (typeof this.body === "object" && this.body !== null && "detail" in this.body) {
      const detail: unknown = this.body.detail;
      if (typeof detail === "object" && detail !== null && "request_id" in detail && typeof detail.request_id === "string") {
        return detail.request_id;
      }
    }
    return this.#headerRequestId;
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

/** `ConnectionError` under the name the Python SDK gives it. */
export const APIConnectionError = ConnectionError;
export type APIConnectionError = ConnectionError;

/** 400 `invalid_request`: the request was malformed or broke a limit. */
export class BadRequestError extends ForgebenchError {}

/** 401 `unauthenticated`: the key is missing, unknown or revoked. */
export class AuthenticationError extends ForgebenchError {}

/**
 * 403: `not_permitted` when a task may not be opened on that callee (no binding, pending,
 * revoked, unknown callee, paused or retired callee, a skill the binding's contract does not
 * list, a call-tree limit — all the same body), or `forbidden` when
 * the key may not do this (a paused agent's key, the callee canceling, ...).
 */
export class PermissionDeniedError extends ForgebenchError {}

/** 404: `{"detail":"task not found"}` for tasks, `not_found` otherwise. */
export class NotFoundError extends ForgebenchError {}

/** 409: `task_not_working` (with the task's `state`), `limit_reached`, `conflict`, or `in_progress` (the same request may succeed in a moment: `Retry-After`). */
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

/**
 * 429: `too_many_requests` (too many long polls at once), or `quota_exceeded` (an open past its
 * binding's contract: its rate, concurrency or daily quota). Nothing was done either way;
 * `retryAfterSeconds` from the header says when to try again.
 */
export class RateLimitError extends ForgebenchError {
  /** The `Retry-After` header in seconds (fractions allowed), when the gateway sent one. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    message: string,
    status: number,
    body: unknown,
    retryAfterSeconds: number | undefined,
    options?: ForgebenchErrorOptions,
  ) {
    super(message, status, body, options);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** 5xx other than 503 (500, and a proxy's 502 or 504). */
export class InternalServerError extends ForgebenchError {}

/** 503 `unavailable`: a backing service failed; nothing was written. */
export class ServiceUnavailableError extends InternalServerError {}

type StatusErrorClass = new (
  message: string,
  status: number,
  body: unknown,
  options?: ForgebenchErrorOptions,
) => ForgebenchError;

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

/**
 * The typed error for a refused request: the table's class, `InternalServerError` for another
 * 5xx, a plain `ForgebenchError` for any other status.
 */
export function errorForResponse(
  status: number,
  body: unknown,
  retryAfterSeconds: number | undefined,
  headerRequestId?: string,
): ForgebenchError {
  const message = `${status}: ${describeBody(body)}`;
  const options: ForgebenchErrorOptions = { headerRequestId };
  if (status === 429) return new RateLimitError(message, status, body, retryAfterSeconds, options);
  const ErrorClass = ERROR_CLASS_BY_STATUS.get(status) ?? (status >= 500 ? InternalServerError : ForgebenchError);
  return new ErrorClass(message, status, body, options);
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

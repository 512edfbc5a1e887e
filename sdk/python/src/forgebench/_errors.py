"""Typed errors: one class per documented status, all under `ForgebenchError`.

A refusal carries the gateway's body as it came (`.body`), its status (`.status`), when the
body has one its `code` (`not_permitted`, `task_not_working`, `invalid_request`, ...), and the
gateway's request id (`.request_id`: the body's `detail.request_id`, else the `X-Request-Id`
header), the id its operators search the logs by.

The class of each status has the same name in every Forgebench SDK (see docs/sdks.md).
"""

from __future__ import annotations

from typing import Any

import httpx


#: Headers that name the request, in the order `request_id` reads them.
REQUEST_ID_HEADERS = ("x-request-id", "x-amzn-requestid", "apigw-requestid")


class ForgebenchError(Exception):
    """The base of every error this SDK raises."""


class APIConnectionError(ForgebenchError):
    """The gateway could not be reached, or the connection broke before an answer came."""


class APITimeoutError(APIConnectionError):
    """No answer within the client's timeout (plus the request's `wait`)."""


class APIStatusError(ForgebenchError):
    """The gateway answered with a status that is not a success."""

    def __init__(self, status: int, body: Any, headers: httpx.Headers | None = None) -> None:
        self.status = status
        self.body = body
        self.headers = headers if headers is not None else httpx.Headers()
        super().__init__(f"{status} {self.message}" if self.message else str(status))

    @property
    def detail(self) -> Any:
        """The body's `detail`: a string (`"task not found"`) or an object with a `code`."""
        if isinstance(self.body, dict):
            return self.body.get("detail")
        return None

    @property
    def code(self) -> str | None:
        """`detail.code` when the body has one (`not_permitted`, `task_not_working`, ...)."""
        detail = self.detail
        if isinstance(detail, dict) and isinstance(detail.get("code"), str):
            return str(detail["code"])
        return None

    @property
    def request_id(self) -> str | None:
        """The gateway's id of the failed request, to quote when asking its operators.

        `detail.request_id` of the body; else the `X-Request-Id` header (every gateway response
        has one, also the four exact bodies that carry no id), or API Gateway's own
        (`x-amzn-RequestId`, `apigw-requestid`) when a proxy answered instead.
        """
        detail = self.detail
        if isinstance(detail, dict) and isinstance(detail.get("request_id"), str):
            return str(detail["request_id"])
        for header in REQUEST_ID_HEADERS:
            value = self.headers.get(header)
            if value:
                return str(value)
        return None

    @property
    def message(self) -> str:
        """A readable reason: `detail.message`, a string `detail`, or the raw body."""
        detail = self.detail
        if isinstance(detail, str):
            return detail
        if isinstance(detail, dict):
            message = detail.get("message")
            if isinstance(message, str):
                return message
            return str(detail.get("code", ""))
        return "" if self.body is None else str(self.body)


class BadRequestError(APIStatusError):
    """400: the request was malformed (`invalid_request`)."""


class AuthenticationError(APIStatusError):
    """401: the key is missing, unknown or revoked (`unauthenticated`)."""


class PermissionDeniedError(APIStatusError):
    """403: `not_permitted` (no live binding to that callee, for every reason: also a skill the
    binding's contract does not list, or a call-tree limit) or `forbidden`."""


class NotFoundError(APIStatusError):
    """404: `{"detail": "task not found"}` for tasks, `not_found` elsewhere."""


class ConflictError(APIStatusError):
    """409: `task_not_working` (with the task's `state`), `limit_reached`, `conflict`, or
    `in_progress` (the same request may succeed in a moment; its `Retry-After` header says
    when)."""

    @property
    def state(self) -> str | None:
        """For `task_not_working`, the state the task is in now."""
        detail = self.detail
        if isinstance(detail, dict) and isinstance(detail.get("state"), str):
            return str(detail["state"])
        return None


class PayloadTooLargeError(APIStatusError):
    """413: the write would take the task past its content bound (`too_large`)."""


class UnprocessableEntityError(APIStatusError):
    """422: a pull result said `working`."""


#: The former name of `UnprocessableEntityError` (deprecated; the same class, kept working).
UnprocessableError = UnprocessableEntityError


class RateLimitError(APIStatusError):
    """429: too many waiting requests at once for this key holder (`too_many_requests`), or an
    open past its binding's contract (`quota_exceeded`: its rate, concurrency or daily quota).

    Nothing was done either way; `retry_after` says when to try again.
    """

    @property
    def retry_after(self) -> float | None:
        """The `Retry-After` header in seconds, when the gateway sent one."""
        return parse_retry_after(self.headers.get("retry-after"))


class InternalServerError(APIStatusError):
    """5xx other than 503."""


class ServiceUnavailableError(InternalServerError):
    """503: a backing service failed; nothing was written, so the request may be repeated."""


_ERROR_BY_STATUS: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: UnprocessableEntityError,
    429: RateLimitError,
    503: ServiceUnavailableError,
}


def error_for_response(response: httpx.Response) -> APIStatusError:
    """The typed error for a non-success response."""
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text or None
    status = response.status_code
    error_class = _ERROR_BY_STATUS.get(status)
    if error_class is None:
        error_class = InternalServerError if status >= 500 else APIStatusError
    return error_class(status, body, response.headers)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a `Retry-After` header of whole or fractional seconds; None otherwise."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None

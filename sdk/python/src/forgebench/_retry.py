"""When a request is sent again, and how long to wait first."""

from __future__ import annotations

import random

import httpx

from ._errors import parse_retry_after

#: Statuses after which nothing was done: any request may be sent again.
NOTHING_DONE_STATUSES = frozenset({429, 503})
#: Statuses of a proxy in front of the gateway: only a repeatable request is sent again.
GATEWAY_STATUSES = frozenset({502, 504})
#: The longest `Retry-After` the client honours before giving up instead.
MAX_RETRY_AFTER_SECONDS = 30.0


def jittered(seconds: float) -> float:
    """`seconds` give or take 25 %, so many clients that failed together do not retry together."""
    return seconds * random.uniform(0.75, 1.25)


def exponential_delay(attempt: int, *, initial: float = 0.5, maximum: float = 8.0) -> float:
    """The pause before retry number `attempt + 1`: doubling from `initial`, capped."""
    return jittered(min(maximum, initial * 2 ** min(attempt, 20)))


def delay_after_response(
    response: httpx.Response, attempt: int, *, repeatable: bool
) -> float | None:
    """How long to wait before sending the request again, or None to answer `response`."""
    status = response.status_code
    if status in NOTHING_DONE_STATUSES:
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        if retry_after is None:
            return exponential_delay(attempt)
        return retry_after if retry_after <= MAX_RETRY_AFTER_SECONDS else None
    if status in GATEWAY_STATUSES and repeatable:
        return exponential_delay(attempt)
    return None


def delay_after_error(
    error: httpx.TransportError, attempt: int, *, repeatable: bool
) -> float | None:
    """How long to wait before sending the request again, or None to raise `error`.

    A request that never left (no connection) may always go again; one that may have reached
    the gateway only when `repeatable`.
    """
    never_sent = isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))
    if never_sent or repeatable:
        return exponential_delay(attempt)
    return None


class Backoff:
    """The growing pause of a loop that keeps going through failures (`serve`)."""

    def __init__(self, initial: float = 0.5, maximum: float = 30.0) -> None:
        self._initial = initial
        self._maximum = maximum
        self._failures = 0

    def next_delay(self) -> float:
        """The pause after one more failure in a row."""
        delay = jittered(min(self._maximum, self._initial * 2 ** min(self._failures, 20)))
        self._failures += 1
        return delay

    def reset(self) -> None:
        """A success: the next failure starts from the initial pause again."""
        self._failures = 0

"""OpenTelemetry, when the application has it (the `opentelemetry-api` package): each request
carries the current context as W3C `traceparent` and `tracestate`, so that the tasks it opens
join the application's trace; a handler runs in the context its task brought (a claimed task's
`traceparent`, a push delivery's headers), so that its spans, and the tasks it opens, join the
call tree's trace. Without OpenTelemetry nothing is added and nothing is read."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

_W3C_HEADERS = ("traceparent", "tracestate")


def outgoing_headers() -> dict[str, str]:
    """The current OpenTelemetry context as W3C headers; none without OpenTelemetry or without
    a current span."""
    try:
        from opentelemetry import propagate
    except ImportError:
        return {}
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return {name: value for name, value in carrier.items() if name in _W3C_HEADERS}


@contextmanager
def continued(carrier: Mapping[str, str | None]) -> Iterator[None]:
    """Makes the context `carrier` brings (`traceparent`, perhaps `tracestate`) the current one
    within the block; nothing changes without OpenTelemetry or without a `traceparent`."""
    found = {name: carrier.get(name) for name in _W3C_HEADERS}
    headers = {name: value for name, value in found.items() if value}
    if "traceparent" not in headers:
        yield
        return
    try:
        from opentelemetry import context, propagate
    except ImportError:
        yield
        return
    token = context.attach(propagate.extract(headers))
    try:
        yield
    finally:
        context.detach(token)

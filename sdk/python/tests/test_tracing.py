"""OpenTelemetry in an instrumented application (the OpenTelemetry SDK, its W3C propagator):
the tasks it opens inside a span join that span's trace, and its handlers, under `serve` and
under `push_app`, run in the trace their task brought, so that their work and the tasks they
open are one trace with the call tree."""

from __future__ import annotations

from gateway import CALLEE_NAME, Pair
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from test_push import pushed_to, settled

from forgebench import Forgebench, Task

TRACER = TracerProvider().get_tracer("an instrumented application")


def ids(traceparent: str | None) -> tuple[str, str]:
    """A `traceparent`'s trace id and span id."""
    assert traceparent is not None
    version, trace_id, span_id, flags = traceparent.split("-")
    assert (version, len(trace_id), len(span_id)) == ("00", 32, 16), traceparent
    return trace_id, span_id


def current_ids() -> tuple[str, str]:
    """The current span's trace id and span id, as `traceparent` writes them."""
    context = trace.get_current_span().get_span_context()
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


def test_a_task_opened_inside_a_span_joins_its_trace_and_one_outside_starts_its_call_trees(
    pair: Pair,
) -> None:
    with Forgebench(api_key=pair.caller_key, base_url=pair.base_url) as client:
        with TRACER.start_as_current_span("plan"):
            planned = current_ids()
            inside = client.agents.call(CALLEE_NAME, text="inside")
        outside = client.agents.call(CALLEE_NAME, text="outside")

    trace_id, span_id = ids(inside.traceparent)
    assert trace_id == planned[0]
    assert span_id != planned[1]  # the gateway's span, under the application's
    # no context sent: the task is in its root call's trace
    assert ids(outside.traceparent)[0] == str(outside.call_id).replace("-", "")


def test_serve_runs_the_handler_in_the_claimed_tasks_trace(pair: Pair) -> None:
    seen: list[tuple[str, str]] = []

    def handler(task: Task) -> str:
        seen.append(current_ids())
        return "done"

    with Forgebench(api_key=pair.caller_key, base_url=pair.base_url) as caller:
        with TRACER.start_as_current_span("plan"):
            planned = current_ids()
            opened = caller.agents.call(CALLEE_NAME, text="traced")
    with Forgebench(api_key=pair.callee_key, base_url=pair.base_url) as client:
        assert client.agents.serve(handler, max_tasks=1, wait=5) == 1

    assert seen == [ids(opened.traceparent)]  # under the span the claimed task names
    assert seen[0][0] == planned[0]


def test_push_app_runs_the_handler_in_the_trace_of_the_delivery(pair: Pair) -> None:
    seen: list[tuple[str, str]] = []

    def handler(task: Task) -> str:
        seen.append(current_ids())
        return "done"

    with pushed_to(pair, handler) as endpoint, Forgebench(
        api_key=pair.caller_key, base_url=pair.base_url
    ) as caller:
        with TRACER.start_as_current_span("plan"):
            planned = current_ids()
            opened = caller.agents.call(CALLEE_NAME, text="push")
        assert settled(pair, opened.id, 20)["status"]["state"] == "completed"
        delivered = endpoint.recorder.exchanges[0].headers["traceparent"]

    assert seen == [ids(delivered)]  # under the span the delivery's POST names
    assert seen[0][0] == planned[0]
    assert seen[0][1] != ids(opened.traceparent)[1]  # the POST's own span, under the task's

"""Every route the SDK calls, as plain request descriptions shared by the sync and async clients."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote

from ._types import Direction, Message, Part, TaskResultIn, TaskState


@dataclass(frozen=True)
class Request:
    """One call to the gateway.

    `wait` is how long the gateway may hold the request (the client's timeout is stretched by
    it). `repeatable` says the request may be sent again when the connection broke after it was
    sent: the gateway makes it safe (a read, a cancel, an open or reply with a `message_id`).
    """

    method: str
    path: str
    params: Mapping[str, Any] = field(default_factory=dict)
    json: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    wait: int = 0
    repeatable: bool = True
    no_content_ok: bool = False


def _segment(value: str) -> str:
    """A path segment: a callee's name or id, or a task id, escaped."""
    if not value:
        raise ValueError("an agent (a callee) and a task id must not be empty")
    return quote(value, safe="")


def _wait_params(wait: int) -> dict[str, Any]:
    if isinstance(wait, bool) or not isinstance(wait, int):
        raise TypeError("wait must be a whole number of seconds")
    return {"wait": wait} if wait else {}


def _optional_int(name: str, value: int | None) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise TypeError(f"{name} must be a whole number")
    return value


def build_message(
    *,
    text: str | None,
    data: Any,
    parts: Sequence[Part] | None,
    message_id: str,
    role: Literal["user", "agent"] = "user",
) -> Message:
    """A message of `role`: a text part for `text`, a data part for `data`, then `parts`."""
    built: list[Part] = []
    if text is not None:
        built.append({"text": text})
    if data is not None:
        built.append({"data": data})
    built.extend(parts or [])
    if not built:
        raise ValueError("a message needs text=, data= or parts=")
    if not message_id:
        raise ValueError("a message_id must not be empty")
    return {"role": role, "parts": built, "message_id": message_id}


def open_task(
    callee: str,
    message: Message,
    *,
    wait: int,
    context_id: str | None,
    parent_call_id: str | None,
) -> Request:
    """`POST /v1/agents/{callee}/tasks`: always carries a `message_id`, so it is repeatable."""
    body: dict[str, Any] = {"message": message}
    if context_id is not None:
        body["context_id"] = context_id
    headers = {"X-Parent-Call": parent_call_id} if parent_call_id is not None else {}
    return Request(
        "POST",
        f"/v1/agents/{_segment(callee)}/tasks",
        params=_wait_params(wait),
        json=body,
        headers=headers,
        wait=wait,
        repeatable="message_id" in message,
    )


def get_task(callee: str, task_id: str, *, wait: int) -> Request:
    """`GET /v1/agents/{callee}/tasks/{task_id}`."""
    return Request(
        "GET",
        f"/v1/agents/{_segment(callee)}/tasks/{_segment(task_id)}",
        params=_wait_params(wait),
        wait=wait,
    )


def cancel_task(callee: str, task_id: str) -> Request:
    """`POST /v1/agents/{callee}/tasks/{task_id}/cancel`: idempotent."""
    return Request("POST", f"/v1/agents/{_segment(callee)}/tasks/{_segment(task_id)}/cancel")


def add_task_message(callee: str, task_id: str, message: Message) -> Request:
    """`POST /v1/agents/{callee}/tasks/{task_id}/messages`: the caller answers a question.

    Repeatable when the message carries a `message_id`: the gateway answers a repeat with the
    task as it stands and records nothing twice.
    """
    return Request(
        "POST",
        f"/v1/agents/{_segment(callee)}/tasks/{_segment(task_id)}/messages",
        json={"message": message},
        repeatable="message_id" in message,
    )


def search_tasks(
    *,
    agent: str | None,
    direction: Direction | None,
    state: TaskState | None,
    context_id: str | None,
    q: str | None,
    since: str | None,
    limit: int | None,
    cursor: str | None,
) -> Request:
    """`GET /v1/tasks` with the filters given (None: not sent)."""
    filters: dict[str, Any] = {
        "agent": agent,
        "direction": direction,
        "state": state,
        "context_id": context_id,
        "q": q,
        "since": since,
        "limit": _optional_int("limit", limit),
        "cursor": cursor,
    }
    return Request(
        "GET", "/v1/tasks", params={k: v for k, v in filters.items() if v is not None}
    )


def agent_card(agent: str) -> Request:
    """`GET /v1/agents/{agent}/.well-known/agent-card.json`."""
    return Request("GET", f"/v1/agents/{_segment(agent)}/.well-known/agent-card.json")


def list_cards(*, limit: int | None, cursor: str | None) -> Request:
    """`GET /v1/agents/cards`: one page of the tenant's cards, by agent name."""
    params: dict[str, Any] = {"limit": _optional_int("limit", limit), "cursor": cursor}
    return Request(
        "GET", "/v1/agents/cards", params={k: v for k, v in params.items() if v is not None}
    )


def claim_next_task(*, wait: int) -> Request:
    """`GET /v1/agents/me/tasks/next`: a Task, or 204 when nothing arrived within `wait`."""
    return Request(
        "GET",
        "/v1/agents/me/tasks/next",
        params=_wait_params(wait),
        wait=wait,
        no_content_ok=True,
    )


def post_result(task_id: str, body: TaskResultIn) -> Request:
    """`POST /v1/agents/me/tasks/{task_id}/result`.

    Repeatable only when its message carries a `message_id` (a question built by `ask`): the
    gateway then answers a repeat with the task. Any other result, repeated after it landed,
    would be refused with `409 task_not_working`.
    """
    message = body.get("message")
    return Request(
        "POST",
        f"/v1/agents/me/tasks/{_segment(task_id)}/result",
        json=body,
        repeatable=message is not None and "message_id" in message,
    )


def report_progress(task_id: str, message: Message) -> Request:
    """`POST /v1/agents/me/tasks/{task_id}/progress`: the callee reports on a task it holds.

    Repeatable when the message carries a `message_id` (a repeat records nothing twice).
    """
    return Request(
        "POST",
        f"/v1/agents/me/tasks/{_segment(task_id)}/progress",
        json={"message": message},
        repeatable="message_id" in message,
    )


def me() -> Request:
    """`GET /v1/agents/me`: the agent the key belongs to."""
    return Request("GET", "/v1/agents/me")

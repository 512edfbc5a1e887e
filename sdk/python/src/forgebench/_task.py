"""`Task`, a read-only view of the gateway's Task, and `TaskReply`, what a callee answers."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from ._types import Artifact, Message, Part, TaskResultIn

#: The name of the artifact that `done(text=..., data=...)` builds (the push path's name too).
RESPONSE_ARTIFACT_NAME = "response"

#: What a `serve` handler may return; see `reply_from_result`.
HandlerResult = Any


def text_of(parts: Sequence[Mapping[str, Any]]) -> str:
    """The text parts of `parts`, joined by newlines."""
    return "\n".join(part["text"] for part in parts if isinstance(part.get("text"), str))


def new_message_id() -> str:
    """A message id for one logical write, reused on every retry of it."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class TaskReply:
    """A callee's answer to a claimed task: the body of `POST .../tasks/{id}/result`.

    Build one with `task.done(...)`, `task.ask(...)` or `task.fail(...)` (or the class methods
    of the same meaning) and hand it to `client.agents.reply(task_id, reply)`, or return it from
    a `serve` handler.
    """

    state: str
    artifacts: list[Artifact] = field(default_factory=list)
    message: Message | None = None
    error: str | None = None

    @classmethod
    def completed(
        cls,
        text: str | None = None,
        data: Any = None,
        artifacts: Sequence[Artifact] | None = None,
    ) -> TaskReply:
        """`completed`: `text` and `data` become one `response` artifact, before `artifacts`."""
        parts: list[Part] = []
        if text is not None:
            parts.append({"text": text})
        if data is not None:
            parts.append({"data": data})
        built: list[Artifact] = [{"name": RESPONSE_ARTIFACT_NAME, "parts": parts}] if parts else []
        return cls(state="completed", artifacts=built + list(artifacts or []))

    @classmethod
    def input_required(cls, question: str) -> TaskReply:
        """`input_required`: the callee asks `question` back.

        The question carries a fresh `message_id`, so posting the same reply again (a retry
        after a dropped connection) is answered with the task instead of a second question.
        """
        message: Message = {
            "role": "agent",
            "parts": [{"text": question}],
            "message_id": new_message_id(),
        }
        return cls(state="input_required", message=message)

    @classmethod
    def failed(cls, error: str) -> TaskReply:
        """`failed`, with `error` as the task's error."""
        return cls(state="failed", error=error)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> TaskReply:
        """A TaskResultIn given as a dict; without a `state` it is `completed`."""
        message = body.get("message")
        error = body.get("error")
        return cls(
            state=str(body.get("state", "completed")),
            artifacts=list(body.get("artifacts") or []),
            message=cast(Message, dict(message)) if isinstance(message, Mapping) else None,
            error=error if isinstance(error, str) else None,
        )

    def to_json(self) -> TaskResultIn:
        """The TaskResultIn body, with only the fields that are set."""
        body: dict[str, Any] = {"state": self.state}
        if self.artifacts:
            body["artifacts"] = list(self.artifacts)
        if self.message is not None:
            body["message"] = self.message
        if self.error is not None:
            body["error"] = self.error
        return cast(TaskResultIn, body)


class Task:
    """A task as the gateway returned it, with shortcuts to what callers and callees read.

    `raw` is the whole Task dictionary; every property below reads from it.
    """

    __slots__ = ("raw",)

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw: dict[str, Any] = dict(raw)

    def __repr__(self) -> str:
        return f"Task(id={self.id!r}, state={self.state!r})"

    @property
    def id(self) -> str:
        return str(self.raw["id"])

    @property
    def state(self) -> str:
        """`submitted`, `working`, `input_required`, `completed`, `failed` or `canceled`."""
        return str(self._status.get("state", ""))

    @property
    def status_message(self) -> Message | None:
        message = self._status.get("message")
        return cast(Message, message) if isinstance(message, dict) else None

    @property
    def question(self) -> str | None:
        """The callee's question (the text of `status.message`) while `input_required`."""
        message = self.status_message
        if self.state != "input_required" or message is None:
            return None
        return text_of(message.get("parts", []))

    @property
    def error(self) -> str | None:
        error = self.raw.get("error")
        return error if isinstance(error, str) else None

    @property
    def context_id(self) -> str:
        return str(self.raw["context_id"])

    @property
    def call_id(self) -> str | None:
        """This task's own call: pass it as `parent_call_id` on calls made while working on it."""
        return self._optional_str("call_id")

    @property
    def parent_call_id(self) -> str | None:
        return self._optional_str("parent_call_id")

    @property
    def root_call_id(self) -> str | None:
        return self._optional_str("root_call_id")

    @property
    def skill(self) -> str | None:
        """The callee's skill the task was opened for (`call(..., skill=...)`); None when the
        open named none."""
        return self._optional_str("skill")

    @property
    def traceparent(self) -> str | None:
        """The W3C trace context of the task's open (a span of the trace its call tree is): a
        pull callee's work on the task joins the trace under it. None when the gateway shows
        none."""
        return self._optional_str("traceparent")

    @property
    def tracestate(self) -> str | None:
        """The W3C `tracestate` the open brought; None when none."""
        return self._optional_str("tracestate")

    @property
    def caller_agent_id(self) -> str | None:
        return self._optional_str("caller_agent_id")

    @property
    def callee_agent_id(self) -> str | None:
        return self._optional_str("callee_agent_id")

    @property
    def message(self) -> Message | None:
        """The caller's opening message (`input.message`)."""
        message = (self.raw.get("input") or {}).get("message")
        return cast(Message, message) if isinstance(message, dict) else None

    @property
    def parts(self) -> list[Part]:
        """The parts of the opening message."""
        message = self.message
        return list(message.get("parts", [])) if message is not None else []

    @property
    def text(self) -> str:
        """The text parts of the opening message, joined by newlines."""
        return text_of(self.parts)

    @property
    def data(self) -> dict[str, Any]:
        """The first data part of the opening message that is a JSON object; `{}` when none."""
        for part in self.parts:
            if "data" in part and isinstance(part["data"], dict):
                return part["data"]
        return {}

    @property
    def artifacts(self) -> list[Artifact]:
        return list(self.raw.get("artifacts") or [])

    @property
    def history(self) -> list[Message]:
        return list(self.raw.get("history") or [])

    def artifact_text(self, separator: str = "\n") -> str:
        """Every artifact's text parts, in order, joined by `separator`."""
        texts = (
            part["text"]
            for artifact in self.artifacts
            for part in artifact.get("parts", [])
            if isinstance(part.get("text"), str)
        )
        return separator.join(texts)

    def done(
        self,
        text: str | None = None,
        data: Any = None,
        artifacts: Sequence[Artifact] | None = None,
    ) -> TaskReply:
        """Answer `completed`; see `TaskReply.completed`."""
        return TaskReply.completed(text=text, data=data, artifacts=artifacts)

    def ask(self, question: str) -> TaskReply:
        """Answer `input_required` with `question`; see `TaskReply.input_required`."""
        return TaskReply.input_required(question)

    def fail(self, message: str) -> TaskReply:
        """Answer `failed` with `message` as the error."""
        return TaskReply.failed(message)

    @property
    def _status(self) -> dict[str, Any]:
        status = self.raw.get("status")
        return status if isinstance(status, dict) else {}

    def _optional_str(self, key: str) -> str | None:
        value = self.raw.get(key)
        return value if isinstance(value, str) else None


def reply_from_result(result: HandlerResult) -> TaskReply:
    """The reply a `serve` handler's return value stands for.

    - a `TaskReply` is sent as it is;
    - a `str` completes the task with one text part;
    - `None` completes it with no artifacts;
    - a dict with a `state` or `artifacts` key is a TaskResultIn (what a push endpoint answers);
    - a non-empty list whose items all have `parts` is the artifacts of a completed task;
    - any other JSON value (a dict, a list, a number, a bool) completes with one data part.
    """
    if isinstance(result, TaskReply):
        return result
    if isinstance(result, str):
        return TaskReply.completed(text=result)
    if result is None:
        return TaskReply.completed()
    if isinstance(result, Mapping):
        if "state" in result or "artifacts" in result:
            return TaskReply.from_json(result)
        return TaskReply.completed(data=dict(result))
    if isinstance(result, (list, tuple)):
        if result and all(_is_artifact(item) for item in result):
            return TaskReply.completed(artifacts=[cast(Artifact, dict(item)) for item in result])
        return TaskReply.completed(data=list(result))
    if isinstance(result, (int, float)):  # bool is an int
        return TaskReply.completed(data=result)
    raise TypeError(
        f"a handler returned {type(result).__name__}; return a TaskReply (task.done/ask/fail), "
        "a str, a dict, a list of artifacts or None"
    )


def _is_artifact(item: object) -> bool:
    return isinstance(item, Mapping) and isinstance(item.get("parts"), list)

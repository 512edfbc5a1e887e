"""The wire shapes, as typed dictionaries (see the gateway's `infra/openapi.yaml`)."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

TaskState = Literal["submitted", "working", "input_required", "completed", "failed", "canceled"]
Direction = Literal["inbound", "outbound", "both"]
ReplyState = Literal["completed", "failed", "input_required"]


class FileRef(TypedDict):
    uri: str
    name: NotRequired[str]
    mime: NotRequired[str]


class Part(TypedDict, total=False):
    """Exactly one of `text`, `data` or `file`."""

    text: str
    data: Any
    file: FileRef


class Message(TypedDict):
    role: NotRequired[Literal["user", "agent"]]
    parts: list[Part]
    message_id: NotRequired[str]


class Artifact(TypedDict):
    name: NotRequired[str]
    parts: list[Part]


class TaskResultIn(TypedDict):
    """The body of `POST /v1/agents/me/tasks/{id}/result`."""

    state: ReplyState
    artifacts: NotRequired[list[Artifact]]
    message: NotRequired[Message]
    error: NotRequired[str]

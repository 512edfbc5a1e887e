"""Answers that carry a secret (shown once, never in `repr`), and the task events of a stream."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._task import Task
from ._types import AuditEntry


@dataclass(frozen=True)
class IssuedKey:
    """`KeyCreated`: a new key, whose secret `key` is shown this once.

    Store `key` at once: the gateway keeps only its hash. `repr` and `str` never show it.
    """

    key_id: str
    key: str = field(repr=False)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> IssuedKey:
        return cls(key_id=str(body["key_id"]), key=str(body["key"]))


@dataclass(frozen=True)
class CreatedTenant:
    """`TenantCreated`: a new tenant and its first admin key (`admin_key`, shown this once)."""

    tenant_id: str
    name: str
    admin_key: str = field(repr=False)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> CreatedTenant:
        return cls(
            tenant_id=str(body["tenant_id"]),
            name=str(body["name"]),
            admin_key=str(body["admin_key"]),
        )


@dataclass(frozen=True)
class CreatedMember:
    """`MemberCreated`: a new member and its first key (`key`, shown this once)."""

    member_id: str
    name: str
    role: str
    key_id: str | None
    key: str = field(repr=False)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> CreatedMember:
        key_id = body.get("key_id")
        return cls(
            member_id=str(body["member_id"]),
            name=str(body["name"]),
            role=str(body["role"]),
            key_id=str(key_id) if key_id is not None else None,
            key=str(body["key"]),
        )


@dataclass(frozen=True)
class AuditPage:
    """One page of the audit log, newest first; `next_cursor` None on the last page.

    A filtered page may be short (even empty) while `next_cursor` still leads on.
    """

    entries: list[AuditEntry]
    next_cursor: str | None

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> AuditPage:
        cursor = body.get("next_cursor")
        return cls(
            entries=list(body.get("items") or []),
            next_cursor=cursor if isinstance(cursor, str) and cursor else None,
        )


#: The events of a task's stream that are changes of the task (each has an `id`).
CHANGE_EVENTS = frozenset({"status", "progress", "question", "answer", "artifact", "final"})


@dataclass(frozen=True)
class TaskEvent:
    """One server-sent event of a task's stream (docs/api.md, "Event streams").

    `event` is `task` (the first: the task as it stands, `data` the Task), a change (`status`,
    `progress`, `question`, `answer`, `artifact`, `final`; `data` has `task_id`, `event`,
    `state`, `timestamp` and what the change added), or `error` (a stream that cannot go on;
    `data` is an error body, and there is no `id`). `id` is the change's number, the value to
    resume from with `last_event_id`. `data` is the parsed JSON (the raw text when it is not
    JSON).
    """

    event: str
    data: Any
    id: str | None = None
    retry: int | None = None

    @property
    def state(self) -> str | None:
        """The task's state after this event (None for an `error` event)."""
        if not isinstance(self.data, dict):
            return None
        if self.event == "task":
            status = self.data.get("status")
            state = status.get("state") if isinstance(status, dict) else None
        else:
            state = self.data.get("state")
        return state if isinstance(state, str) else None

    @property
    def task(self) -> Task | None:
        """The task, for the `task` event; None for the others."""
        if self.event == "task" and isinstance(self.data, dict):
            return Task(self.data)
        return None

    @property
    def is_final(self) -> bool:
        """Whether this event ends the task's stream: `final`, or a finished task's `task`."""
        return self.event == "final" or (
            self.event == "task" and self.state in ("completed", "failed", "canceled")
        )


class EventParser:
    """Server-sent events from lines (the text/event-stream format, WHATWG HTML §9.2.6)."""

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None
        self._retry: int | None = None

    def feed(self, line: str) -> TaskEvent | None:
        """Take one line (without its end); an event when `line` is the blank line ending one."""
        if line == "":
            return self._dispatch()
        if line.startswith(":"):  # a comment: the gateway's keep-alives
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry":
            if value.isdigit():
                self._retry = int(value)
        return None

    def _dispatch(self) -> TaskEvent | None:
        if not self._data and not self._event:
            self._id = None
            return None
        text = "\n".join(self._data)
        try:
            data: Any = json.loads(text)
        except ValueError:
            data = text
        event = TaskEvent(
            event=self._event or "message", data=data, id=self._id, retry=self._retry
        )
        self._event, self._data, self._id, self._retry = "", [], None, None
        return event

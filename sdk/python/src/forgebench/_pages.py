"""Pages of the paged reads: a task search (`GET /v1/tasks`) and the card registry."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._task import Task


@dataclass(frozen=True)
class TaskPage:
    """One page of a task search, newest first by creation (docs/api.md, "Task search").

    `tasks` are the page's tasks (the wire's `items`, summaries without history);
    `next_cursor` is passed as `cursor` for the next page, None on the last page.
    """

    tasks: list[Task]
    next_cursor: str | None

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> TaskPage:
        cursor = body.get("next_cursor")
        return cls(
            tasks=[Task(item) for item in body.get("items") or []],
            next_cursor=cursor if isinstance(cursor, str) and cursor else None,
        )


@dataclass(frozen=True)
class CardPage:
    """One page of the tenant's agent cards, by agent name; `next_cursor` None on the last."""

    cards: list[dict[str, Any]]
    next_cursor: str | None

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> CardPage:
        cursor = body.get("next_cursor")
        return cls(
            cards=[dict(card) for card in body.get("cards") or []],
            next_cursor=cursor if isinstance(cursor, str) and cursor else None,
        )

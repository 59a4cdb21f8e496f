"""The team listing's order and cursor, shared by both adapters so their pages agree."""

from __future__ import annotations

from shared.orchestrator.tasks.models import Task
from shared.storage.pages import BadCursor, decode_cursor, encode_cursor
from shared.storage.times import sortable


def newest_first(task: Task) -> tuple[str, str]:
    """The listing's sort key, to be sorted descending: creation time, then id."""
    return (sortable(task.created_at), task.id)


def cursor_after(team: str, position: tuple[str, str]) -> str:
    """The cursor continuing a listing after the task whose sort key is `position`."""
    return encode_cursor(team, {"created_at": position[0], "id": position[1]})


def position_of(team: str, cursor: str) -> tuple[str, str]:
    """The sort key a cursor continues after; `BadCursor` when it is not a task listing's."""
    position = decode_cursor(team, cursor)
    created_at, task_id = position.get("created_at"), position.get("id")
    if set(position) != {"created_at", "id"} or not (
        isinstance(created_at, str) and isinstance(task_id, str)
    ):
        raise BadCursor("the cursor was not issued by this listing")
    return (created_at, task_id)

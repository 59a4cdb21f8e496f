"""A store's `UnstorableValue` answers exactly as the `InvalidArgument` it replaced."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from shared.auth.principal import Principal
from shared.storage.values import UnstorableValue, check_item_size
from shared.tools.dispatch import execute
from shared.tools.envelope import Envelope
from shared.tools.errors import InvalidArgument
from shared.tools.registry import READ_ONLY, ToolContext, ToolGroup

GROUP: ToolGroup[str] = ToolGroup(name="values", build_service=lambda: "service")
CALLER = Principal(team="alpha", token_id="t", token_name="t", scopes=frozenset())
MESSAGE = "`content` is too large to store: the record would be 400,001 bytes"


class Empty(BaseModel):
    pass


@GROUP.tool(name="stores", title="t", description="d", scopes=(), annotations=READ_ONLY)
def stores(ctx: ToolContext[str], args: Empty) -> Empty:
    raise UnstorableValue(MESSAGE, field="content")


@GROUP.tool(name="validates", title="t", description="d", scopes=(), annotations=READ_ONLY)
def validates(ctx: ToolContext[str], args: Empty) -> Empty:
    raise InvalidArgument(MESSAGE, field="content")


def _call(tool: str) -> object:
    envelope = Envelope(tool=tool, arguments={}, principal=CALLER, request_id="r")
    return execute(GROUP, envelope).model_dump()


def test_an_unstorable_value_is_the_same_answer_as_an_invalid_argument() -> None:
    answer = _call("stores")
    assert answer == _call("validates")
    assert answer == {
        "result": None,
        "error": {"code": "invalid_argument", "message": MESSAGE, "field": "content", "data": None},
    }


def test_the_storage_layer_raises_its_own_error_naming_the_field() -> None:
    with pytest.raises(UnstorableValue) as refused:
        check_item_size({"content": "x" * 400_000}, "content")
    assert refused.value.field == "content"
    assert "too large to store" in refused.value.message

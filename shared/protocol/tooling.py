"""`tools/list` cursors and result shaping for `tools/call`."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from shared.protocol.jsonrpc import INVALID_PARAMS, RpcError
from shared.tools.envelope import ErrorInfo

# Keys of an MCP CallToolResult: a tool's own top-level fields never overwrite these.
_RESERVED_RESULT_KEYS = frozenset(
    {"content", "structuredContent", "isError", "_meta", "resultType"}
)


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"tools:{offset}".encode()).decode()


def decode_cursor(cursor: object) -> int:
    """The offset a `tools/list` cursor stands for; -32602 for anything we did not issue."""
    if not isinstance(cursor, str):
        raise RpcError(INVALID_PARAMS, "`cursor` must be a string returned by tools/list")
    try:
        prefix, _, offset = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
        if prefix != "tools" or not offset.isdigit():
            raise ValueError(cursor)
        return int(offset)
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise RpcError(
            INVALID_PARAMS, f"`cursor` is not a valid tools/list cursor: {cursor!r}"
        ) from exc


def success_result(structured: dict[str, Any], text_field: str | None = None) -> dict[str, Any]:
    """structuredContent, the same JSON as text, and (for seed 001 clients) the fields on top.

    With `text_field`, the text block is that field's value alone: a string as is, anything
    else as JSON (`{}` for None), for seeds whose tools return a bare string or list.
    """
    result: dict[str, Any] = {k: v for k, v in structured.items() if k not in _RESERVED_RESULT_KEYS}
    if text_field is None:
        text = json.dumps(structured, ensure_ascii=False)
    else:
        value = structured.get(text_field)
        text = value if isinstance(value, str) else json.dumps(value or {}, ensure_ascii=False)
        if isinstance(value, list):
            text = json.dumps(value, ensure_ascii=False)
    result.update(
        {
            "content": [{"type": "text", "text": text}],
            "structuredContent": structured,
            "isError": False,
        }
    )
    return result


def error_result(error: ErrorInfo) -> dict[str, Any]:
    """A tool's own failure: `isError: true` with a message naming the field and the fix.

    The details (`code`, `message`, `field`, and `status` / `holder` where the failure has them)
    sit in `result.error`, where seed 002's clients read them, and in `structuredContent.error`,
    where an MCP SDK user reaches them: SDK clients drop unknown result keys, and check
    `structuredContent` against the tool's `outputSchema` only on success (MCP: an error result
    need not conform), so the error object travels there intact.
    """
    message = error.message
    if error.field and f"`{error.field}`" not in message:
        # Every message names its argument; one written without it still says which.
        message = f"`{error.field}`: {message}"
    body: dict[str, Any] = {"code": error.code, "message": message}
    if error.field:
        body["field"] = error.field
    if error.data:
        body.update(error.data)
    return {
        "content": [{"type": "text", "text": message}],
        "structuredContent": {"error": body},
        "isError": True,
        "error": body,
    }

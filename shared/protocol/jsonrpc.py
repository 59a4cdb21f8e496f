"""JSON-RPC 2.0 codes and the protocol-level error cairn raises."""

from __future__ import annotations

from typing import Any, Final

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
# Seed 000's auth errors.
UNAUTHENTICATED: Final = -32001
MISSING_SCOPE: Final = -32002
RATE_LIMITED: Final = -32003
# 2026-07-28 envelope errors (mcp-types names them HEADER_MISMATCH / UNSUPPORTED_PROTOCOL_VERSION).
HEADER_MISMATCH: Final = -32020
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022

HTTP_STATUS: Final[dict[int, int]] = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
    UNAUTHENTICATED: 401,
    MISSING_SCOPE: 403,
    RATE_LIMITED: 429,
}


class RpcError(Exception):
    """A protocol failure answered as a JSON-RPC error object."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        data: Any = None,
        http_status: int | None = None,
        headers: dict[str, str] | None = None,
        request_id: Any = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.http_status = http_status if http_status is not None else HTTP_STATUS.get(code, 200)
        self.headers = headers or {}
        # Set when the error is found before dispatch but the request's id is already known.
        self.request_id = request_id

    def to_error_object(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def error_response(request_id: Any, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_error_object()}


def success_response(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}

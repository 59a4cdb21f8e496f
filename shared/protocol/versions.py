"""Protocol versions cairn speaks and how a request's version is decided."""

from __future__ import annotations

from typing import Final

HANDSHAKE_VERSIONS: Final[tuple[str, ...]] = ("2025-03-26", "2025-06-18", "2025-11-25")
"""Reached through `initialize`."""
MODERN_VERSIONS: Final[tuple[str, ...]] = ("2026-07-28",)
"""Stateless: every request carries its version in `_meta` and headers; `server/discover`."""
SUPPORTED_VERSIONS: Final[tuple[str, ...]] = HANDSHAKE_VERSIONS + MODERN_VERSIONS
LATEST_HANDSHAKE: Final = HANDSHAKE_VERSIONS[-1]
# The Streamable HTTP spec: with no MCP-Protocol-Version header, assume 2025-03-26.
DEFAULT_HEADER_VERSION: Final = "2025-03-26"


def negotiate_handshake(requested: object) -> str:
    """The version `initialize` answers with: the client's if supported, else our latest."""
    if isinstance(requested, str) and requested in HANDSHAKE_VERSIONS:
        return requested
    return LATEST_HANDSHAKE


def is_modern(version: str) -> bool:
    return version in MODERN_VERSIONS


# `_meta` keys of the 2026-07-28 spec. Spelled here rather than imported from `mcp_types`,
# whose import (every wire model of the spec) cost the gateway's cold start more than half a
# second for three strings; tests/functional/test_catalog_file.py checks they match it.
PROTOCOL_VERSION_META_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_META_KEY: Final = "io.modelcontextprotocol/serverInfo"

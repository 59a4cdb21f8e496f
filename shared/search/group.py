"""The search tool group itself; its tools register on it from `tools` (`@GROUP.tool`)."""

from __future__ import annotations

from shared.config import names
from shared.search.service import SearchService
from shared.search.wiring import build_search_service
from shared.tools.registry import ToolGroup

GROUP: ToolGroup[SearchService] = ToolGroup(
    name=names.GROUP_SEARCH, build_service=build_search_service
)

"""The sync tool group itself; its tools register on it from `tools` (`@GROUP.tool`)."""

from __future__ import annotations

from shared.config import names
from shared.sync.service import SyncService
from shared.sync.wiring import build_sync_service
from shared.tools.registry import ToolGroup

GROUP: ToolGroup[SyncService] = ToolGroup(name=names.GROUP_SYNC, build_service=build_sync_service)

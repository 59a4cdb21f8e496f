"""The sync tool group itself; its tools register on it from `tools` (`@GROUP.tool`).

Its service is bound by the composition root (`shared.app.groups`): it indexes through the search
group and prunes memories.
"""

from __future__ import annotations

from shared.config import names
from shared.sync.service import SyncService
from shared.tools.registry import ToolGroup

GROUP: ToolGroup[SyncService] = ToolGroup(name=names.GROUP_SYNC)

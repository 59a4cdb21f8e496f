"""The sessions tool group itself; its tools register on it from `tools` (`@GROUP.tool`).

Its service is bound by the composition root (`shared.app.groups`): its engrams are the memory
group's memories.
"""

from __future__ import annotations

from shared.config import names
from shared.sessions.service import SessionService
from shared.tools.registry import ToolGroup

GROUP: ToolGroup[SessionService] = ToolGroup(name=names.GROUP_SESSIONS)

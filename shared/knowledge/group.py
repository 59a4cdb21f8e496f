"""The knowledge tool group itself; its tools register on it from `tools` (`@GROUP.tool`).

Its service is bound by the composition root (`shared.app.groups`): it indexes its nodes through the
search group.
"""

from __future__ import annotations

from shared.config import names
from shared.knowledge.service import KnowledgeService
from shared.tools.registry import ToolGroup

GROUP: ToolGroup[KnowledgeService] = ToolGroup(name=names.GROUP_KNOWLEDGE)

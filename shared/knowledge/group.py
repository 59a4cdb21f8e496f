"""The knowledge tool group itself; its tools register on it from `tools` (`@GROUP.tool`)."""

from __future__ import annotations

from shared.config import names
from shared.knowledge.service import KnowledgeService
from shared.knowledge.wiring import build_knowledge_service
from shared.tools.registry import ToolGroup

GROUP: ToolGroup[KnowledgeService] = ToolGroup(
    name=names.GROUP_KNOWLEDGE, build_service=build_knowledge_service
)

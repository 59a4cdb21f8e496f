"""The workflows tool group itself; its tools register on it from `tools` (`@GROUP.tool`).

Its service is bound by the composition root (`shared.app.groups`): it is put together with
the orchestrator's task store and the knowledge events its executions record.
"""

from __future__ import annotations

from shared.config import names
from shared.tools.registry import ToolGroup
from shared.workflows.service import WorkflowService

GROUP: ToolGroup[WorkflowService] = ToolGroup(name=names.GROUP_WORKFLOWS)

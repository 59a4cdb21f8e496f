"""The orchestrator tool group itself; its tools register on it from each part's `tools` module.

Its service is bound by the composition root (`shared.app.groups`): a finished task moves its
workflow step on and is recorded as a knowledge event, which are other groups' business.
"""

from __future__ import annotations

from shared.config import names
from shared.orchestrator.service import Orchestrator
from shared.tools.registry import ToolGroup

GROUP: ToolGroup[Orchestrator] = ToolGroup(name=names.GROUP_ORCHESTRATOR)

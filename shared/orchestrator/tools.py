"""The orchestrator tool group (seed 000): agent.*, task.*, artifact.*, event.* and cost.*
over the coordination table (and the artifacts/ prefix of the bucket).

Each part (`shared.orchestrator.agents`, `.tasks`, …) declares its tools in its own `tools`
module with `@GROUP.tool`, as every other group does; importing them here registers them.
`shared.orchestrator.wiring` builds their services once per container.
"""

from __future__ import annotations

from shared.orchestrator.agents import tools as _agents  # noqa: F401 - registers its tools
from shared.orchestrator.artifacts import tools as _artifacts  # noqa: F401
from shared.orchestrator.costs import tools as _costs  # noqa: F401
from shared.orchestrator.events import tools as _events  # noqa: F401
from shared.orchestrator.group import GROUP
from shared.orchestrator.tasks import tools as _tasks  # noqa: F401

__all__ = ["GROUP"]

"""Lambda entry point of the orchestrator tool group (wiring only)."""

from shared.orchestrator.tools import GROUP
from shared.tools.lambda_entry import make_group_handler

handler = make_group_handler(GROUP)

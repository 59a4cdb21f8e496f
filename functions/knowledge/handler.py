"""Lambda entry point of the knowledge tool group (wiring only)."""

from shared.knowledge.tools import GROUP
from shared.tools.lambda_entry import make_group_handler

handler = make_group_handler(GROUP)

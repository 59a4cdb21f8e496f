"""Lambda entry point of the handoffs tool group (wiring only)."""

from shared.handoffs.tools import GROUP
from shared.tools.lambda_entry import make_group_handler

handler = make_group_handler(GROUP)

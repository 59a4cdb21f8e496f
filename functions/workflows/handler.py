"""Lambda entry point of the workflows tool group (wiring only)."""

from shared.tools.lambda_entry import make_group_handler
from shared.workflows.tools import GROUP

handler = make_group_handler(GROUP)

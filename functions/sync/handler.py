"""Lambda entry point of the sync tool group (wiring only)."""

from shared.sync.tools import GROUP
from shared.tools.lambda_entry import make_group_handler

handler = make_group_handler(GROUP)

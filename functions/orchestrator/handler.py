"""Lambda entry point of the orchestrator tool group (wiring only)."""

from shared.app.groups import load_group
from shared.coldstart import end_init
from shared.config import names
from shared.tools.lambda_entry import make_group_handler

handler = make_group_handler(load_group(names.GROUP_ORCHESTRATOR))

end_init()  # the last line of init: shared/coldstart.py

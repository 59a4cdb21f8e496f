"""Lambda entry point of the sync tool group (wiring only)."""

from shared.coldstart import end_init
from shared.sync.tools import GROUP
from shared.tools.lambda_entry import make_group_handler

handler = make_group_handler(GROUP)

end_init()  # the last line of init: shared/coldstart.py

"""Lambda entry point of the knowledge tool group (wiring only): the MCP tools and the HTTP
routes' hooks (GitHub webhook deliveries), which the gateway forwards as envelopes."""

from shared.app.groups import load_group
from shared.coldstart import end_init
from shared.config import names
from shared.knowledge.tools import function_group
from shared.tools.lambda_entry import make_group_handler

handler = make_group_handler(function_group(load_group(names.GROUP_KNOWLEDGE)))

end_init()  # the last line of init: shared/coldstart.py

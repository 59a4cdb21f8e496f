"""Lambda entry point of the knowledge tool group (wiring only): the MCP tools and the HTTP
routes' hooks (GitHub webhook deliveries), which the gateway forwards as envelopes."""

from shared.coldstart import end_init
from shared.knowledge.tools import function_group
from shared.tools.lambda_entry import make_group_handler

handler = make_group_handler(function_group())

end_init()  # the last line of init: shared/coldstart.py

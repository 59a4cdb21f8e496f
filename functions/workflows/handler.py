"""Lambda entry point of the workflows tool group (wiring only): tool calls from the gateway,
and schedule triggers firing (EventBridge Scheduler invokes it under the scheduler role)."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.app.groups import load_group
from shared.app.reactions import build_workflow_service
from shared.coldstart import end_init
from shared.config import names
from shared.tools.lambda_entry import make_group_handler
from shared.workflows.scheduled import fire, is_schedule_firing
from shared.workflows.wiring import FUNCTION_ARN_ENV

_tool_handler = make_group_handler(load_group(names.GROUP_WORKFLOWS))


def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # The schedules this function creates target it: it learns its own ARN here.
    os.environ.setdefault(FUNCTION_ARN_ENV, context.invoked_function_arn)
    if is_schedule_firing(event):
        return fire(build_workflow_service(), event)
    return _tool_handler(event, context)


end_init()  # the last line of init: shared/coldstart.py

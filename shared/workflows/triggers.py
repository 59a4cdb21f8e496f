"""What starts a workflow: `manual` (workflow.start), `schedule` (EventBridge Scheduler in AWS)
or `event` (a team event of a given type published with event.publish)."""

from __future__ import annotations

import re
from typing import Any

from shared.tools.errors import InvalidArgument

# EventBridge Scheduler's expression forms (at() one-off schedules are not a workflow trigger).
RATE = re.compile(r"^rate\(\s*[1-9]\d*\s+(minute|minutes|hour|hours|day|days)\s*\)$")
CRON = re.compile(r"^cron\(\s*(\S+\s+){5}\S+\s*\)$")
EVENT_TYPE = re.compile(r"^[A-Za-z0-9_.:/-]{1,128}$")


def check_trigger(trigger_type: str, config: dict[str, Any]) -> None:
    """`InvalidArgument` naming `trigger_config` when it does not fit `trigger_type`.

    >>> check_trigger("schedule", {"expression": "rate(5 minutes)"})
    >>> check_trigger("event", {"event_type": "build.finished"})
    """
    if trigger_type == "manual":
        if config:
            raise InvalidArgument(
                "`trigger_config` must be empty for a manual trigger (got keys "
                f"{', '.join(sorted(config))})",
                field="trigger_config",
            )
        return
    if trigger_type == "schedule":
        expression = config.get("expression")
        if not isinstance(expression, str) or not (
            RATE.match(expression) or CRON.match(expression)
        ):
            raise InvalidArgument(
                '`trigger_config.expression` must be an EventBridge Scheduler "rate(5 minutes)" '
                f'or "cron(0 9 ? * MON-FRI *)" expression (got {expression!r})',
                field="trigger_config",
            )
        if CRON.match(expression):
            from shared.workflows.cron import CronError, check

            timezone = config.get("timezone")
            try:
                check(expression, timezone if isinstance(timezone, str) else None)
            except CronError as exc:
                raise InvalidArgument(
                    f"`trigger_config.expression`: {exc}", field="trigger_config"
                ) from exc
        extra = set(config) - {"expression", "timezone", "inputs"}
        if extra:
            raise InvalidArgument(
                f"`trigger_config` has unknown key(s) {', '.join(sorted(extra))}; a schedule "
                "takes expression, timezone and inputs",
                field="trigger_config",
            )
        return
    event_type = config.get("event_type")
    if not isinstance(event_type, str) or not EVENT_TYPE.match(event_type):
        raise InvalidArgument(
            "`trigger_config.event_type` must name the event type that starts the workflow "
            f"(1-128 of A-Z a-z 0-9 _ . : / -; got {event_type!r})",
            field="trigger_config",
        )
    extra = set(config) - {"event_type"}
    if extra:
        raise InvalidArgument(
            f"`trigger_config` has unknown key(s) {', '.join(sorted(extra))}; an event trigger "
            "takes event_type only (the event's payload becomes the inputs)",
            field="trigger_config",
        )

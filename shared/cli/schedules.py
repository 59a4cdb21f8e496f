"""`cairn sync schedule|schedules|unschedule`: a deployed stack's per-team sync schedules.

    cairn sync --stack cairn-prod schedule --team acme --every 15m
    cairn sync --stack cairn-prod schedule --team acme --cron '0 6 * * ? *'
    cairn sync --stack cairn-prod schedules                 (or: list)
    cairn sync --stack cairn-prod unschedule --team acme    (or: delete --team acme)

The stack is found by --stack or $CAIRN_STACK_NAME, with the AWS credentials in the environment;
its outputs name the schedule group, the runner and the scheduler role.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from shared.config import names

# Imported by the commands that use them: `cairn --help` builds this parser too.
if TYPE_CHECKING:
    from shared.sync.schedules import SyncSchedules


def add_parser(commands: Any) -> None:
    sync = commands.add_parser(
        "sync",
        help="per-team sync schedules of a deployed stack",
        description=__doc__.split("\n\n")[0],
    )
    sync.add_argument("--stack", help=f"deployed stack name (default: ${names.Env.STACK_NAME})")
    actions = sync.add_subparsers(dest="sync_command", required=True)
    put = actions.add_parser("schedule", help="create or replace a team's schedule")
    put.add_argument("--team", required=True)
    when = put.add_mutually_exclusive_group(required=True)
    when.add_argument("--every", help="e.g. 15m, 2h, 1d (at least 5m)")
    when.add_argument("--cron", help="Scheduler's six fields, e.g. '0 6 * * ? *' (UTC)")
    # `list` and `delete` are the names for the same commands.
    actions.add_parser("schedules", aliases=["list"], help="list every team's schedule")
    drop = actions.add_parser("unschedule", aliases=["delete"], help="delete a team's schedule")
    drop.add_argument("--team", required=True)
    sync.set_defaults(run=run)


def cloudformation() -> Any:
    import boto3

    return boto3.client("cloudformation")


def _schedules(stack: str) -> SyncSchedules:
    import boto3

    from shared.config.stack import StackOutputsError, stack_outputs
    from shared.sync.schedules import ScheduleError, ScheduleTarget, SyncSchedules

    keys = (
        names.Outputs.SYNC_SCHEDULE_GROUP,
        names.Outputs.SYNC_RUNNER_ARN,
        names.Outputs.SYNC_SCHEDULER_ROLE_ARN,
    )
    try:
        outputs = stack_outputs(stack, keys, cloudformation())
    except StackOutputsError as exc:
        raise ScheduleError(str(exc)) from exc
    target = ScheduleTarget(*(outputs[key] for key in keys))
    return SyncSchedules(boto3.client("scheduler"), target)


def run(args: argparse.Namespace) -> int:
    from shared.sync.schedules import ScheduleError, expression

    stack = args.stack or os.environ.get(names.Env.STACK_NAME)
    try:
        if not stack:
            raise ScheduleError(
                f"name the deployed stack with --stack or ${names.Env.STACK_NAME}: these "
                "schedules run on EventBridge Scheduler in AWS (on the local server, set a "
                "team's schedule with the sync_schedule_set tool; `cairn serve` fires it)"
            )
        schedules = _schedules(stack)
        if args.sync_command == "schedule":
            done = schedules.put(args.team, expression(every=args.every, cron=args.cron))
            print(json.dumps(done.model_dump(mode="json")))
        elif args.sync_command in ("schedules", "list"):
            for schedule in schedules.list():
                print(json.dumps(schedule))
        elif not schedules.delete(args.team):
            raise ScheduleError(f"team {args.team!r} has no sync schedule in {stack!r}")
    except ScheduleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0

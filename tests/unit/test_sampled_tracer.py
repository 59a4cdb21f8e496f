"""The X-Ray tracer is created at the first invocation X-Ray samples: an unsampled cold start
never imports the X-Ray SDK (wrapt, asyncio), and every call gives the same result either way.
Each test runs in a fresh interpreter, where `sys.modules` shows what was loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SAMPLED = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
UNSAMPLED = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0"

_PROGRAM = """
import json, os, sys
import inspect
from shared.observability import tracer
seen = []

@tracer.capture_lambda_handler
def handler(event, context):
    # Called by SampledTracer's own wrapper (`call`) unless Powertools' wrapper is in between.
    seen.append(inspect.stack()[1].function != "call")
    if event.get("fail"):
        raise ValueError("refused")
    return {"echo": event}

@tracer.capture_method
def double(number):
    return number * 2

def invoke(header):
    if header is None:
        os.environ.pop("_X_AMZN_TRACE_ID", None)
    else:
        os.environ["_X_AMZN_TRACE_ID"] = header
    seen.clear()
    try:
        handler({"fail": True}, None)
        raised = None
    except ValueError as exc:
        raised = str(exc)
    return {
        "handler": handler({"n": 1}, None),
        "method": double(21),
        "raised": raised,
        "loaded": tracer.loaded,
        "sdk": "aws_xray_sdk" in sys.modules,
        "asyncio": "asyncio" in sys.modules,
        "traced": all(seen),
    }

print(json.dumps([invoke(header) for header in json.loads(sys.argv[1])]))
"""


def _run(headers: list[str | None]) -> list[dict[str, Any]]:
    environment = {k: v for k, v in os.environ.items() if k != "_X_AMZN_TRACE_ID"}
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_PROGRAM), json.dumps(headers)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    calls: list[dict[str, Any]] = json.loads(result.stdout)
    return calls


def test_unsampled_invocations_never_load_the_xray_sdk() -> None:
    for call in _run([None, UNSAMPLED, UNSAMPLED]):
        assert call == {
            "handler": {"echo": {"n": 1}},
            "method": 42,
            "raised": "refused",
            "loaded": False,
            "sdk": False,
            "asyncio": False,
            "traced": False,
        }


def test_the_first_sampled_invocation_loads_the_tracer_and_it_stays() -> None:
    unsampled, sampled, after = _run([UNSAMPLED, SAMPLED, UNSAMPLED])
    assert (unsampled["loaded"], unsampled["sdk"]) == (False, False)
    for call in (sampled, after):  # the same results, with Powertools' Tracer loaded
        assert call["handler"] == {"echo": {"n": 1}}
        assert (call["method"], call["raised"]) == (42, "refused")
        assert (call["loaded"], call["sdk"]) == (True, True)
    # Only the sampled invocation went through Powertools' wrapper (it names the subsegment).
    assert sampled["traced"] is True
    assert (unsampled["traced"], after["traced"]) == (False, False)

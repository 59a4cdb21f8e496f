"""Group functions initialized on demand build each pydantic model at its first use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from shared.coldstart import wanted

ROOT = Path(__file__).resolve().parents[2]

# Imports the memory group's handler, then reports which models were built, uses one, reports
# again, and checks a deferred model validates, refuses and dumps as an eager one does.
PROBE = """
import json
import pydantic
import functions.memory.handler
from shared.memory.models import MemoryGetInput

def walk(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from walk(sub)

def built():
    return sorted({c.__qualname__ for c in walk(pydantic.BaseModel) if c.__pydantic_complete__})

before = built()
ok = MemoryGetInput.model_validate({"key": "k"}).model_dump(mode="json")
try:
    MemoryGetInput.model_validate({"key": "k", "surprise": 1})
    refused = None
except pydantic.ValidationError as exc:
    refused = [e["type"] for e in exc.errors()]
print(json.dumps({"before": before, "after": built(), "ok": ok, "refused": refused,
                  "schema": MemoryGetInput.model_json_schema()}))
"""


def _probe(init_type: str | None) -> dict[str, object]:
    environment = {k: v for k, v in os.environ.items() if k != "AWS_LAMBDA_INITIALIZATION_TYPE"}
    environment.update(CAIRN_STORAGE="dynamodb", AWS_REGION="us-east-1", PYTHONPATH=str(ROOT))
    if init_type is not None:
        environment["AWS_LAMBDA_INITIALIZATION_TYPE"] = init_type
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, object] = json.loads(result.stdout.strip().splitlines()[-1])
    return figures


def test_only_an_on_demand_lambda_init_defers() -> None:
    assert wanted({"AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand"})
    assert not wanted({"AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start"})
    assert not wanted({"AWS_LAMBDA_INITIALIZATION_TYPE": "provisioned-concurrency"})
    assert not wanted({})


def test_a_deferred_group_builds_a_model_at_first_use_and_behaves_the_same() -> None:
    deferred = _probe("on-demand")
    eager = _probe(None)

    # On demand nothing is built at import, and using a model builds it
    assert deferred["before"] == []
    assert "MemoryGetInput" in deferred["after"]  # type: ignore[operator]
    # Elsewhere (SnapStart, local, tests) every model is built as it is defined
    assert "MemoryGetInput" in eager["before"]  # type: ignore[operator]
    # Validation, refusal and schema are the same either way
    for field in ("ok", "refused", "schema"):
        assert deferred[field] == eager[field]

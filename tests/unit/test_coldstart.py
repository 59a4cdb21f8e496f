"""A Lambda init: group functions initialized on demand build each pydantic model at its first
use, and no function collects garbage while its modules load."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from shared.coldstart import INIT_TYPE_ENV, wanted
from tests.unit.lambda_init import ROOT, lambda_init_environment, run_json

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
    figures: dict[str, object] = run_json(PROBE, environment)
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


# Imports a handler as a Lambda init does and reports the collector's state after it.
GC_PROBE = """
import gc, importlib, json, sys
import shared  # as functions/__init__.py does first: a collection can land on its very import
paused = not gc.isenabled()
before = sum(generation["collections"] for generation in gc.get_stats())
importlib.import_module(sys.argv[1])
print(json.dumps({
    "collections": sum(generation["collections"] for generation in gc.get_stats()) - before,
    "paused": paused,
    "enabled": gc.isenabled(),
    "frozen": gc.get_freeze_count(),
}))
"""


def _gc_after_init(function: str, catalog: Path) -> dict[str, object]:
    from infra.imports import handler_module

    environment = lambda_init_environment(function, catalog)
    state: dict[str, object] = run_json(GC_PROBE, environment, handler_module(function))
    return state


def test_every_function_collects_no_garbage_during_init_and_resumes_after_it(
    lambda_catalog: Path,
) -> None:
    from infra.imports import functions

    names = functions()
    with ThreadPoolExecutor(max_workers=2) as pool:
        states = dict(
            zip(names, pool.map(lambda f: _gc_after_init(f, lambda_catalog), names), strict=True)
        )
    for function, state in states.items():
        # No collection while the modules loaded; what init built is frozen (tens of thousands
        # of objects), and the collector runs again for the invocations.
        assert state["paused"] is True, function
        assert state["collections"] == 0, function
        assert state["enabled"] is True, function
        assert isinstance(state["frozen"], int), function
        assert state["frozen"] > 10_000, function


def test_outside_a_lambda_init_the_collector_is_never_paused() -> None:
    environment = {k: v for k, v in os.environ.items() if k != INIT_TYPE_ENV}
    program = "import gc, shared, json; print(json.dumps(gc.isenabled()))"
    assert run_json(program, environment) is True

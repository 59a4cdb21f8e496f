"""No thread outlives a Lambda invocation: Lambda freezes the process between invocations, so
a thread a handler started (inline curation's detection worker was one) would stop mid-work and
resume, if ever, in someone else's invocation. Every handler is imported, and the memory service
every memory-writing function builds is built, in one fresh interpreter with the environment
the stack gives the functions; no thread may start."""

from __future__ import annotations

import json
import subprocess
import sys

from infra.functions import CURATION
from infra.imports import LAMBDA_ENVIRONMENT, functions, handler_module, lambda_environment
from tests.infra.support import ROOT

_PROBE = r"""
import importlib, json, sys, threading
started = []
original = threading.Thread.start
def recording_start(self, *args, **kwargs):
    started.append(self.name)
    return original(self, *args, **kwargs)
threading.Thread.start = recording_start
for module in sys.argv[1:]:
    importlib.import_module(module)
# What the memory, sessions, sync and sync runner functions build at their first call.
from shared.memory.wiring import build_detection_queue, build_memory_service
build_memory_service()
print(json.dumps({
    "started": started,
    "alive": threading.active_count(),
    "detection": build_detection_queue() is not None,
}))
"""


def test_the_functions_environment_leaves_curation_to_the_stream() -> None:
    assert LAMBDA_ENVIRONMENT["CAIRN_CURATION"] == CURATION == "stream"


def test_no_lambda_handler_starts_a_thread() -> None:
    modules = [handler_module(function) for function in functions()]
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, *modules],
        cwd=ROOT,
        env=lambda_environment(),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found == {"started": [], "alive": 1, "detection": False}

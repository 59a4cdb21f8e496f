"""The time budget of a tool call (docs/infra/functions-and-bundling.md, "Timeouts"): API
Gateway gives up on its integration at 29 s, so the gateway must end first (28 s) to answer with
an MCP error rather than a 504, and a group function must end before the gateway stops waiting
for it (24 s)."""

from __future__ import annotations

from shared.config import names
from tests.infra.support import Synth

API_GATEWAY_INTEGRATION_SECONDS = 29


def test_the_gateway_ends_before_api_gateway_gives_up(synth: Synth) -> None:
    gateway = synth.resources[synth.functions()["gateway"]]["Properties"]
    assert gateway["Timeout"] <= 28 < API_GATEWAY_INTEGRATION_SECONDS


def test_every_group_function_ends_well_before_the_gateway(synth: Synth) -> None:
    functions = synth.functions()
    timeouts = {
        group: synth.resources[functions[group]]["Properties"]["Timeout"]
        for group in names.TOOL_GROUPS
    }
    assert timeouts
    assert {group: t for group, t in timeouts.items() if t > 24} == {}

"""The toolsets as data: every tool in one, each seed-shaped endpoint exactly its seed's tools
(names read from the seeds' own texts, not from cairn's lists), and the size budgets."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from shared.app.groups import load_catalog
from shared.app.toolsets import CORE, SEED_ENDPOINTS, TOOLSETS
from shared.protocol.toolsets import Toolset, Toolsets, UnknownToolset
from shared.tools.catalog import ToolCatalog

SEEDS = Path(__file__).resolve().parents[2].parent / "shared" / "seeds"
CORE_BUDGET = 32_768


def _seed(prefix: str) -> str:
    (path,) = SEEDS.glob(f"{prefix}_*.txt")
    return path.read_text()


def _hoard() -> set[str]:
    # Seed 000's two tool tables (`name | scope | description`), before "Tools NOT Exposed".
    exposed = _seed("000").split("Tools NOT Exposed", 1)[0]
    rows = re.findall(r"^([a-z_]+(?:\.[a-z_]+)?) \|", exposed, flags=re.MULTILINE)
    return set(rows)


def _verbs() -> set[str]:
    return set(re.findall(r"Section titled “([a-z_]+)”", _seed("002")))


def _hippo() -> set[str]:
    # Each tool's section opens with its name alone on a line.
    return set(re.findall(r"^([a-z_]+)$", _seed("003"), flags=re.MULTILINE))


def _nullblock() -> set[str]:
    return set(re.findall(r"^### ([a-z_]+)$", _seed("004"), flags=re.MULTILINE))


SEED_TOOLS = {"hoard": _hoard, "verbs": _verbs, "hippo": _hippo, "nullblock": _nullblock}


@pytest.fixture(scope="module")
def catalog() -> ToolCatalog:
    return load_catalog()


def _bytes(catalog: ToolCatalog, names: frozenset[str] | None) -> int:
    tools = [e.descriptor for e in catalog if names is None or e.name in names]
    reply = {"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}
    return len(json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode())


def test_the_seeds_name_90_tools_as_their_readme_counts() -> None:
    counts = {name: len(tools()) for name, tools in SEED_TOOLS.items()}

    assert counts == {"hoard": 52, "verbs": 7, "hippo": 9, "nullblock": 22}


@pytest.mark.parametrize("endpoint", SEED_ENDPOINTS)
def test_each_seed_endpoint_is_exactly_its_seeds_tools(endpoint: str) -> None:
    assert TOOLSETS.select(endpoint) == frozenset(SEED_TOOLS[endpoint]())


def test_every_tool_is_in_some_toolset_and_every_toolset_names_real_tools(
    catalog: ToolCatalog,
) -> None:
    names = {entry.name for entry in catalog}
    listed = {tool for toolset in TOOLSETS for tool in toolset.tools}

    assert names - listed == set()
    assert listed - names == set()
    assert all(toolset.tools for toolset in TOOLSETS)


def test_the_core_toolset_lists_within_32_kib(catalog: ToolCatalog) -> None:
    core = TOOLSETS.select(CORE)
    assert core is not None
    assert {"recall", "remember", "search", "store_handoff", "claim_handoff"} <= core

    assert _bytes(catalog, core) <= CORE_BUDGET


def test_all_is_every_tool_within_100_kib(catalog: ToolCatalog) -> None:
    assert TOOLSETS.select("all") is None
    assert _bytes(catalog, None) <= 102_400


def test_a_url_segment_joins_toolsets_with_plus_and_refuses_unknown_names() -> None:
    sets = Toolsets([Toolset("a", "A", ("x",)), Toolset("b", "B", ("y",))])

    assert sets.select("a+b") == frozenset({"x", "y"})
    assert sets.select("a+all") is None
    for bad in ("c", "a+c", "", "a+"):
        with pytest.raises(UnknownToolset, match="known: a, b, all"):
            sets.select(bad)


def test_a_tokens_unknown_default_toolset_selects_nothing_rather_than_everything() -> None:
    sets = Toolsets([Toolset("a", "A", ("x",))])

    assert sets.select_default(["gone"]) == frozenset()
    assert sets.select_default(["a", "gone"]) == frozenset({"x"})
    assert sets.select_default(None) is None


@pytest.mark.parametrize("name", ["all", "a+b"])
def test_a_toolset_cannot_take_a_reserved_name(name: str) -> None:
    with pytest.raises(ValueError, match="not usable"):
        Toolsets([Toolset(name, "", ("x",))])


def test_the_banner_offers_a_ready_line_for_all_and_each_seed_endpoint() -> None:
    from shared.local.server import other_endpoints

    text = other_endpoints("http://127.0.0.1:8765/mcp", "cairn_sk_x")

    for name in ("all", *SEED_ENDPOINTS):
        assert (
            f"claude mcp add --transport http cairn-{name} http://127.0.0.1:8765/mcp/{name} "
            '--header "Authorization: Bearer cairn_sk_x"'
        ) in text


def test_the_context_bench_prints_one_table_row_per_url() -> None:
    from shared.bench.context import table

    row = {
        "token": "printed",
        "url": "/mcp",
        "tools": 14,
        "initialize_bytes": 1399,
        "tools_list_bytes": 17838,
        "total_bytes": 19237,
        "estimated_tokens": 4809,
    }

    assert table([row]).splitlines()[-1] == (
        "| printed | `/mcp` | 14 | 1,399 | 17,838 | 19,237 | 4,809 |"
    )

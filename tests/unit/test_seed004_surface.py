"""Seed 004's surface, exactly: its 22 tools are served, with its arguments and the annotation
category of its summary table."""

from __future__ import annotations

import pytest

from shared.app.groups import tool_specs
from shared.tools.registry import ToolSpec

# Seed 004's summary table: tool -> category.
SEED_004: dict[str, str] = {
    "engram_create": "Write",
    "engram_get": "Read-only",
    "engram_search": "Read-only",
    "engram_update": "Write",
    "engram_delete": "Destructive",
    "engram_list_by_type": "Read-only",
    "user_profile_get": "Read-only",
    "user_profile_update": "Idempotent",
    "hecate_new_session": "Write",
    "hecate_list_sessions": "Read-only",
    "hecate_resume_session": "Write",
    "hecate_delete_session": "Destructive",
    "hecate_remember": "Idempotent",
    "hecate_cleanup": "Destructive",
    "hecate_pin_engram": "Idempotent",
    "hecate_unpin_engram": "Write",
    "hecate_set_model": "Write",
    "moros_remember": "Idempotent",
    "moros_cleanup": "Destructive",
    "moros_pin_engram": "Idempotent",
    "moros_unpin_engram": "Write",
    "moros_set_model": "Write",
}
# The seed's "Annotation Categories": (readOnly, destructive, idempotent).
CATEGORIES: dict[str, tuple[bool, bool, bool]] = {
    "Read-only": (True, False, True),
    "Write": (False, False, False),
    "Idempotent": (False, False, True),
    "Destructive": (False, True, False),
}
# Each persona tool's arguments in the seed: (required, optional).
PERSONA_ARGUMENTS: dict[str, tuple[set[str], set[str]]] = {
    "hecate_new_session": ({"wallet_address"}, set()),
    "hecate_list_sessions": ({"wallet_address"}, {"limit"}),
    "hecate_resume_session": ({"wallet_address", "session_id"}, set()),
    "hecate_delete_session": ({"wallet_address", "session_id"}, set()),
    "hecate_remember": ({"wallet_address", "key", "content"}, {"engram_type"}),
    "hecate_cleanup": ({"wallet_address"}, set()),
    "hecate_pin_engram": ({"id"}, set()),
    "hecate_unpin_engram": ({"id"}, set()),
    # cairn adds one optional argument (docs/sessions.md): the wallet a model is chosen for.
    "hecate_set_model": ({"query"}, {"wallet_address"}),
    "moros_remember": ({"wallet_address", "key", "content"}, {"engram_type"}),
    "moros_cleanup": ({"wallet_address"}, set()),
    "moros_pin_engram": ({"id"}, set()),
    "moros_unpin_engram": ({"id"}, set()),
    "moros_set_model": ({"query"}, {"wallet_address"}),
}


@pytest.fixture(scope="module")
def specs() -> dict[str, ToolSpec]:
    catalog = tool_specs()
    return {name: spec for name in SEED_004 if (spec := catalog.get(name)) is not None}


def test_cairn_serves_all_22_tools_of_seed_004(specs: dict[str, ToolSpec]) -> None:
    assert sorted(specs) == sorted(SEED_004)
    assert len(specs) == 22


@pytest.mark.parametrize("tool", sorted(SEED_004))
def test_each_tool_carries_the_seeds_annotation_category(
    specs: dict[str, ToolSpec], tool: str
) -> None:
    annotations = specs[tool].annotations
    assert (annotations.read_only, annotations.destructive, annotations.idempotent) == (
        CATEGORIES[SEED_004[tool]]
    )


@pytest.mark.parametrize("tool", sorted(PERSONA_ARGUMENTS))
def test_each_persona_tool_takes_the_seeds_arguments(specs: dict[str, ToolSpec], tool: str) -> None:
    schema = specs[tool].input_model.model_json_schema()
    required, optional = PERSONA_ARGUMENTS[tool]
    assert set(schema.get("required", [])) == required
    assert set(schema["properties"]) == required | optional


def test_remember_offers_the_seeds_three_engram_types(specs: dict[str, ToolSpec]) -> None:
    for tool in ("hecate_remember", "moros_remember"):
        schema = specs[tool].input_model.model_json_schema()
        assert set(schema["properties"]["engram_type"]["enum"]) == {
            "persona",
            "preference",
            "knowledge",
        }

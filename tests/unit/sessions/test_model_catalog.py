"""Model catalogs and the model query rules of hecate_set_model / moros_set_model."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from shared.sessions.adapters.catalog import (
    SHIPPED_CATALOG,
    BedrockModelCatalog,
    CatalogUnreadable,
    FileModelCatalog,
)
from shared.sessions.models import ModelInfo
from shared.sessions.service import closest_models, resolve_model
from shared.tools.errors import InvalidArgument

SHIPPED = FileModelCatalog().models()


def _ids(models: list[ModelInfo]) -> set[str]:
    return {m.id for m in models}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("opus", "claude-opus-4-5"),
        ("claude-sonnet", "claude-sonnet-4-5"),
        ("Claude Sonnet 4", "claude-sonnet-4"),
        ("gpt-4o", "gpt-4o"),
        ("GPT-4o mini", "gpt-4o-mini"),
        ("opus 4.1", "claude-opus-4-1"),
        ("nova", "amazon.nova-pro-v1:0"),
    ],
)
def test_a_query_naming_one_model_picks_it(query: str, expected: str) -> None:
    chosen, candidates = resolve_model(query, SHIPPED)
    assert chosen is not None
    assert (chosen.id, candidates) == (expected, [])


def test_a_query_matching_several_models_returns_them_all_and_picks_none() -> None:
    chosen, candidates = resolve_model("claude", SHIPPED)
    assert chosen is None
    assert _ids(candidates) == {m.id for m in SHIPPED if m.id.startswith("claude")}
    chosen, candidates = resolve_model("gemini", SHIPPED)
    assert (chosen, _ids(candidates)) == (None, {"gemini-2.5-pro", "gemini-2.5-flash"})


def test_an_alias_shared_by_no_other_model_is_exact_even_when_words_match_several() -> None:
    # `haiku` is in two models' names, but the shipped catalog makes it an alias of one.
    chosen, _ = resolve_model("haiku", SHIPPED)
    assert chosen is not None
    assert chosen.id == "claude-haiku-4-5"


def test_an_unknown_query_matches_nothing_and_the_closest_names_are_similar_ones() -> None:
    chosen, candidates = resolve_model("gpt-4x-turbo", SHIPPED)
    assert (chosen, candidates) == (None, [])
    assert closest_models("gpt-4x-turbo", SHIPPED)[0].startswith("gpt-4")
    assert "claude-opus-4-5" in closest_models("opuss", SHIPPED)


def test_a_query_of_punctuation_only_is_refused_naming_query() -> None:
    with pytest.raises(InvalidArgument) as refused:
        resolve_model("--", SHIPPED)
    assert refused.value.field == "query"


def test_the_shipped_catalog_has_unique_ids_and_unique_aliases() -> None:
    assert SHIPPED_CATALOG.is_file()
    aliases = [alias for m in SHIPPED for alias in m.aliases]
    assert len(aliases) == len(set(aliases))
    assert len(_ids(SHIPPED)) == len(SHIPPED)


def test_a_configured_catalog_that_is_not_a_catalog_is_refused_naming_the_file(
    tmp_path: Path,
) -> None:
    broken = tmp_path / "models.json"
    broken.write_text(json.dumps({"models": [{"id": "x"}]}))
    with pytest.raises(CatalogUnreadable, match=r"models\.json"):
        FileModelCatalog(broken)
    with pytest.raises(CatalogUnreadable, match=r"missing\.json"):
        FileModelCatalog(tmp_path / "missing.json")


def test_the_bedrock_catalog_lists_active_text_models_once() -> None:
    client = boto3.client("bedrock", region_name="us-east-1")
    summaries = [
        {
            "modelArn": "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-opus-4-1",
            "modelId": "anthropic.claude-opus-4-1-20250805-v1:0",
            "modelName": "Claude Opus 4.1",
            "providerName": "Anthropic",
            "modelLifecycle": {"status": "ACTIVE"},
        },
        {
            "modelArn": "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-v2",
            "modelId": "anthropic.claude-v2",
            "modelName": "Claude",
            "providerName": "Anthropic",
            "modelLifecycle": {"status": "LEGACY"},
        },
    ]
    with Stubber(client) as stub:
        stub.add_response(
            "list_foundation_models",
            {"modelSummaries": summaries},
            {"byOutputModality": "TEXT"},
        )
        catalog = BedrockModelCatalog(client)
        first = catalog.models()
        second = catalog.models()  # no second call: the stub would raise
        stub.assert_no_pending_responses()

    assert first == second
    assert [(m.id, m.name, m.provider) for m in first] == [
        ("anthropic.claude-opus-4-1-20250805-v1:0", "Claude Opus 4.1", "anthropic")
    ]
    chosen, _ = resolve_model("opus", first)
    assert chosen is not None
    assert chosen.id.startswith("anthropic.claude-opus")

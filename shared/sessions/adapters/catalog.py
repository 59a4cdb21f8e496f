"""Model catalogs: a JSON file (the one shipped with cairn, or one named by configuration) and
Bedrock's foundation models (`ListFoundationModels`) in AWS."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from shared.sessions.models import ModelInfo

SHIPPED_CATALOG = Path(__file__).resolve().parents[1] / "model_catalog.json"


class _CatalogFile(BaseModel):
    models: list[ModelInfo]


class CatalogUnreadable(Exception):
    """The configured catalog file is missing or not a catalog (says which and why)."""


class FileModelCatalog:
    """`ModelCatalog` from a JSON file `{"models": [{"id", "name", "provider", "aliases"}]}`,
    read once."""

    def __init__(self, path: Path = SHIPPED_CATALOG) -> None:
        try:
            parsed = _CatalogFile.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, ValidationError) as exc:
            raise CatalogUnreadable(f"model catalog {path}: {exc}") from exc
        ids = [m.id for m in parsed.models]
        if len(set(ids)) != len(ids):
            raise CatalogUnreadable(f"model catalog {path}: model ids repeat")
        self._models = parsed.models

    def models(self) -> list[ModelInfo]:
        return list(self._models)


class BedrockModelCatalog:
    """`ModelCatalog` of the region's active Bedrock foundation models with text output,
    listed once per container (the list changes with Bedrock releases, not per call)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._models: list[ModelInfo] | None = None

    def models(self) -> list[ModelInfo]:
        if self._models is None:
            summaries = self._client.list_foundation_models(byOutputModality="TEXT").get(
                "modelSummaries", []
            )
            self._models = [
                ModelInfo(
                    id=summary["modelId"],
                    name=summary.get("modelName") or summary["modelId"],
                    provider=(summary.get("providerName") or "").lower(),
                )
                for summary in summaries
                if summary.get("modelLifecycle", {}).get("status", "ACTIVE") == "ACTIVE"
            ]
        return list(self._models)

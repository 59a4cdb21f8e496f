"""Every store declared with `Adapters.named` names two classes that exist: a misspelt module or
class would fail only at that store's first use on that backend."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

from shared.storage.backends import Adapters

ROOT = Path(__file__).resolve().parents[2]
WIRINGS = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts)
    for path in (ROOT / "shared").rglob("wiring.py")
)


def _named() -> dict[str, tuple[str, str]]:
    found = {}
    for module in WIRINGS:
        for name, value in vars(importlib.import_module(module)).items():
            if isinstance(value, Adapters) and value.references is not None:
                found[f"{module}.{name}"] = value.references
    return found


def test_the_wirings_declare_their_stores_by_name() -> None:
    assert len(_named()) >= 10


@pytest.mark.parametrize(("store", "references"), _named().items())
def test_each_named_adapter_resolves_to_a_class(store: str, references: tuple[str, str]) -> None:
    for reference in references:
        assert isinstance(pkgutil.resolve_name(reference), type), f"{store}: {reference}"

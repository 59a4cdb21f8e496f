"""Prod keeps its search collection when the stack goes; dev cleans up after itself."""

from __future__ import annotations

from tests.infra.support import Synth


def test_prod_retains_the_search_collection_and_dev_deletes_it(dev: Synth, prod: Synth) -> None:
    (kept,) = prod.of_type("AWS::OpenSearchServerless::Collection").values()
    (dropped,) = dev.of_type("AWS::OpenSearchServerless::Collection").values()
    assert kept["DeletionPolicy"] == "Retain"
    assert kept["UpdateReplacePolicy"] == "Retain"
    assert dropped["DeletionPolicy"] == "Delete"

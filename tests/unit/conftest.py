"""Unit tests cannot open sockets: any attempt fails the test."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _no_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise RuntimeError("unit tests must not open sockets")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return


@pytest.fixture(scope="session")
def lambda_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tool catalog a gateway bundle carries, for the Lambda-init probes (test_coldstart,
    test_deferred_tools): generated once, as it takes a fresh interpreter importing every group;
    the probes only read it."""
    from infra.bundling import generate_catalog

    catalog = tmp_path_factory.mktemp("lambda-catalog") / "catalog.json"
    generate_catalog(catalog)
    return catalog

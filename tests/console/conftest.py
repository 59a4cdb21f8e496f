"""Console tests in-process: the app on moto behind FastAPI's TestClient (no socket)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from shared.app.gateway import create_app
from tests.functional.conftest import Harness, aws, harness  # noqa: F401 (fixtures)

NONCE = re.compile(r'name="csrf" value="([^"]+)"')
# A handoff document with every section a handoff must have.
HANDOFF = "\n\n".join(
    f"## {section}\n\n{text}"
    for section, text in (
        ("Start & intent", "Migrate the billing cron."),
        ("Journey", "Read the old scripts."),
        ("Current state", "Half the jobs are moved."),
        ("What’s left", "The nightly invoice job."),
        ("Open questions", "Who owns the old box?"),
    )
)


@dataclass
class Console:
    """A browser-like client of /console, signed in with `secret` by `sign_in`."""

    client: TestClient
    harness: Harness

    def sign_in(self, secret: str) -> Any:
        page = self.client.get("/console/login")
        nonce = NONCE.search(page.text)
        assert nonce, page.text
        return self.client.post(
            "/console/login",
            data={"token": secret, "csrf": nonce.group(1)},
            follow_redirects=False,
        )

    def csrf(self, path: str = "/console/review") -> str:
        found = NONCE.search(self.client.get(path).text)
        assert found
        return found.group(1)

    def post(self, path: str, data: dict[str, Any], **headers: str) -> Any:
        return self.client.post(path, data=data, headers=headers, follow_redirects=False)


@pytest.fixture
def console(harness: Harness) -> Console:  # noqa: F811
    return Console(TestClient(create_app(harness.gateway), base_url="http://testserver"), harness)


@pytest.fixture
def other_console(harness: Harness) -> Console:  # noqa: F811
    """A second browser (its own cookie jar) on the same app."""
    return Console(TestClient(create_app(harness.gateway), base_url="http://testserver"), harness)

"""`TokenRequest`: what a token is issued from (the CLI, the admin API, agent.register)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shared.auth.models import TokenRequest


def test_an_unknown_field_is_refused_by_name_instead_of_ignored() -> None:
    with pytest.raises(ValidationError, match="rate_limit"):
        TokenRequest.model_validate(
            {"team": "alpha", "name": "ci", "scopes": ["memory.read"], "rate_limit": 600}
        )


def test_the_rate_limit_is_set_by_its_own_name() -> None:
    request = TokenRequest(
        team="alpha", name="ci", scopes=("memory.read",), rate_limit_per_minute=600
    )
    assert request.rate_limit_per_minute == 600

"""Team tokens on moto: hashing at rest, expiry, revocation, the per-minute limit."""

from __future__ import annotations

import re
import time

import boto3
import pytest

from shared.auth.adapters.dynamodb import DynamoTokenStore
from shared.auth.errors import InvalidToken, RateLimited, UnknownToken
from shared.auth.models import TokenRequest
from shared.auth.service import TokenService
from shared.config import names
from shared.config.settings import Settings


def _service(settings: Settings, clock: list[float]) -> TokenService:
    table = boto3.resource("dynamodb").Table(settings.table(names.TABLE_TOKENS))
    return TokenService(DynamoTokenStore(table), b"pepper", clock=lambda: clock[0])


def test_a_secret_is_cairn_sk_plus_32_random_bytes_and_is_stored_only_hashed(aws: Settings) -> None:
    clock = [time.time()]
    issued = _service(aws, clock).issue(TokenRequest(team="t", name="n", scopes=("memory",)))
    assert re.fullmatch(r"cairn_sk_[A-Za-z0-9_-]{43}", issued.secret)
    items = boto3.resource("dynamodb").Table(aws.table(names.TABLE_TOKENS)).scan()["Items"]
    assert issued.secret not in repr(items)
    assert issued.secret.removeprefix("cairn_sk_") not in repr(items)


def test_an_expired_token_is_refused(aws: Settings) -> None:
    clock = [time.time()]
    service = _service(aws, clock)
    issued = service.issue(TokenRequest(team="t", name="n", scopes=("memory",), expires_days=1))
    assert service.authenticate(issued.secret)[0].team == "t"
    clock[0] += 86_400 + 1
    with pytest.raises(InvalidToken):
        service.authenticate(issued.secret)


def test_a_revoked_token_is_refused_and_listing_never_shows_secrets(aws: Settings) -> None:
    service = _service(aws, [time.time()])
    issued = service.issue(TokenRequest(team="t", name="n", scopes=("memory",)))
    listed = service.list_team("t")
    assert [r.token_id for r in listed] == [issued.record.token_id]
    assert issued.secret not in repr(listed)
    service.revoke(issued.record.token_id)
    with pytest.raises(InvalidToken):
        service.authenticate(issued.secret)
    with pytest.raises(UnknownToken):
        service.revoke("tok_nope")


def test_the_rate_limit_trips_after_the_configured_count_and_resets_next_window(
    aws: Settings,
) -> None:
    clock = [1_000_040.0]  # 20 s into the window that starts at 1_000_020
    service = _service(aws, clock)
    issued = service.issue(
        TokenRequest(team="t", name="n", scopes=("memory",), rate_limit_per_minute=3)
    )
    for _ in range(3):
        service.authenticate_and_limit(issued.secret)
    with pytest.raises(RateLimited) as tripped:
        service.authenticate_and_limit(issued.secret)
    assert tripped.value.retry_after_seconds == 40
    clock[0] += 60
    service.authenticate_and_limit(issued.secret)


def test_unknown_scopes_are_rejected_when_creating_a_token() -> None:
    with pytest.raises(ValueError, match="unknown scope"):
        TokenRequest(team="t", name="n", scopes=("memory", "root"))

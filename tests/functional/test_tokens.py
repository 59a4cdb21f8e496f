"""Team tokens on moto: hashing at rest, expiry, revocation, the per-minute limit."""

from __future__ import annotations

import re
import time
from datetime import timedelta

import boto3
import pytest

from shared.auth.adapters.dynamodb import DynamoTokenStore
from shared.auth.errors import InvalidToken, RateLimited, UnknownToken
from shared.auth.models import TokenRequest
from shared.auth.principal import Principal
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


def _issuer(service: TokenService, **extra: object) -> tuple[str, Principal]:
    request = TokenRequest.model_validate(
        {"team": "t", "name": "registrar", "scopes": ("agent.register",), **extra}
    )
    secret = service.issue(request).secret
    return secret, service.authenticate(secret)[0]


def test_a_minted_token_inherits_its_issuers_earlier_expiry_and_lower_rate_limit(
    aws: Settings,
) -> None:
    clock = [time.time()]
    service = _service(aws, clock)
    _, issuer = _issuer(service, expires_days=2, rate_limit_per_minute=30)

    minted = service.issue(
        TokenRequest(team="t", name="agent:a", scopes=("memory",), rate_limit_per_minute=600),
        issuer=issuer,
    )

    assert minted.record.issued_by == issuer.token_id
    assert minted.record.expires_at == issuer.token_expires_at
    assert minted.record.rate_limit_per_minute == 30
    assert service.find(minted.secret) == minted.record
    clock[0] += 2 * 86_400 + 1
    with pytest.raises(InvalidToken):
        service.authenticate(minted.secret)


def test_a_minted_token_keeps_its_own_limits_when_they_are_tighter(aws: Settings) -> None:
    service = _service(aws, [time.time()])
    _, issuer = _issuer(service)  # no expiry, 600 a minute

    minted = service.issue(
        TokenRequest(
            team="t", name="agent:a", scopes=("memory",), expires_days=1, rate_limit_per_minute=5
        ),
        issuer=issuer,
    )

    assert minted.record.expires_at == minted.record.created_at + timedelta(days=1)
    assert minted.record.rate_limit_per_minute == 5


def test_a_minted_token_may_call_no_tool_its_issuer_may_not(aws: Settings) -> None:
    service = _service(aws, [time.time()])
    _, listed = _issuer(service, allowed_tools=("agent.register", "memory_get", "recall"))
    _, in_context = _issuer(service, context="agent")

    from_list = service.issue(
        TokenRequest(team="t", name="agent:a", scopes=("memory",)), issuer=listed
    )
    narrowed = service.issue(
        TokenRequest(
            team="t", name="agent:b", scopes=("memory",), allowed_tools=("recall", "memory_put")
        ),
        issuer=listed,
    )
    from_context = service.issue(
        TokenRequest(team="t", name="agent:c", scopes=("memory",)), issuer=in_context
    )

    assert from_list.record.allowed_tools == ("agent.register", "memory_get", "recall")
    assert narrowed.record.allowed_tools == ("recall",)
    assert from_context.record.context == "agent"
    assert service.authenticate(from_context.secret)[0].allowed_tools == (in_context.allowed_tools)
    with pytest.raises(ValueError, match="none of the tools"):
        service.issue(
            TokenRequest(team="t", name="agent:d", scopes=("memory",), allowed_tools=("search",)),
            issuer=listed,
        )


def test_revoking_an_issuer_revokes_what_it_issued_and_theirs_but_nothing_else(
    aws: Settings,
) -> None:
    service = _service(aws, [time.time()])
    issuer_secret, issuer = _issuer(service)
    child = service.issue(TokenRequest(team="t", name="c", scopes=("memory",)), issuer=issuer)
    child_principal = service.authenticate(child.secret)[0]
    grandchild = service.issue(
        TokenRequest(team="t", name="g", scopes=("memory",)), issuer=child_principal
    )
    bystander = service.issue(TokenRequest(team="t", name="b", scopes=("memory",)))
    already = service.issue(TokenRequest(team="t", name="r", scopes=("memory",)), issuer=issuer)
    service.revoke(already.record.token_id)

    revocation = service.revoke(issuer.token_id)

    assert revocation.record.token_id == issuer.token_id
    assert sorted(r.token_id for r in revocation.also_revoked) == sorted(
        [child.record.token_id, grandchild.record.token_id]
    )
    assert revocation.to_wire()["also_revoked"] == [r.token_id for r in revocation.also_revoked]
    for secret in (issuer_secret, child.secret, grandchild.secret):
        with pytest.raises(InvalidToken):
            service.authenticate(secret)
    assert service.authenticate(bystander.secret)[0].token_id == bystander.record.token_id


def test_a_token_cannot_mint_for_another_team(aws: Settings) -> None:
    service = _service(aws, [time.time()])
    _, issuer = _issuer(service)

    with pytest.raises(ValueError, match="cannot mint"):
        service.issue(TokenRequest(team="other", name="x", scopes=("memory",)), issuer=issuer)

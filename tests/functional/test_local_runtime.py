"""The local runtime's dev token: provisioned, kept, replaced when revoked, refused when foreign."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.auth.errors import InvalidToken
from shared.auth.models import TokenRequest
from shared.config import names
from shared.local.layout import DEV_TOKEN_FILE
from shared.local.runtime import DevTokenUnusable, LocalRuntime
from tests.functional.conftest import local_runtime


@pytest.fixture
def local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalRuntime]:
    # The runtime points boto3 at fake credentials; monkeypatch puts the environment back.
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION"):
        monkeypatch.setenv(key, "placeholder")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with local_runtime(tmp_path / "data") as started:
        yield started


def restart(local: LocalRuntime) -> LocalRuntime:
    local.stop()
    again = LocalRuntime(local.data_dir)
    again.start()
    return again


def test_without_cairn_dev_token_a_token_is_generated_kept_and_reused(local: LocalRuntime) -> None:
    first = local.provision_dev_token(None)

    assert first.secret.startswith("cairn_sk_")
    assert not first.from_env
    assert first.record.team == names.LOCAL_TEAM
    assert first.record.scopes == ("admin",)
    assert (local.data_dir / DEV_TOKEN_FILE).read_text() == first.secret
    assert (local.data_dir / DEV_TOKEN_FILE).stat().st_mode & 0o077 == 0

    again = restart(local)
    try:
        second = again.provision_dev_token(None)
        assert second.secret == first.secret
        assert second.record.token_id == first.record.token_id
    finally:
        again.stop()


def test_cairn_dev_token_is_provisioned_as_an_all_scopes_token_of_team_local(
    local: LocalRuntime,
) -> None:
    dev = local.provision_dev_token("cairn_sk_chosen-by-the-developer")

    assert dev.from_env
    assert dev.secret == "cairn_sk_chosen-by-the-developer"
    assert local.tokens is not None
    principal, _ = local.tokens.authenticate(dev.secret)
    assert principal.team == names.LOCAL_TEAM
    assert principal.has_any_scope(("memory.write",))
    assert principal.has_any_scope(("admin",))
    assert not (local.data_dir / DEV_TOKEN_FILE).exists()


def test_a_revoked_kept_dev_token_is_replaced_not_reinstated(local: LocalRuntime) -> None:
    old = local.provision_dev_token(None)
    assert local.tokens is not None
    local.tokens.revoke(old.record.token_id)

    again = restart(local)
    try:
        new = again.provision_dev_token(None)
        assert again.tokens is not None
        assert new.secret != old.secret
        assert (again.data_dir / DEV_TOKEN_FILE).read_text() == new.secret
        with pytest.raises(InvalidToken):
            again.tokens.authenticate(old.secret)
        assert again.tokens.authenticate(new.secret)[0].team == names.LOCAL_TEAM
    finally:
        again.stop()


def test_cairn_dev_token_naming_a_revoked_token_is_refused_with_a_message(
    local: LocalRuntime,
) -> None:
    dev = local.provision_dev_token("cairn_sk_revoked-later")
    assert local.tokens is not None
    local.tokens.revoke(dev.record.token_id)

    with pytest.raises(DevTokenUnusable, match="CAIRN_DEV_TOKEN names a revoked"):
        local.provision_dev_token("cairn_sk_revoked-later")
    with pytest.raises(InvalidToken):
        local.tokens.authenticate("cairn_sk_revoked-later")


def test_cairn_dev_token_naming_another_teams_token_is_refused(local: LocalRuntime) -> None:
    secret, _ = local.issue(
        TokenRequest(team="acme", name="agent", scopes=("memory.read",)),
        secret="cairn_sk_belongs-to-acme",
    )

    with pytest.raises(DevTokenUnusable, match="another team's"):
        local.provision_dev_token(secret)

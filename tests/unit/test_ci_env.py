"""tests/ci.py: every truthy spelling of $CI (GitHub's `true`, .ci/run's `1`) makes a missing
browser or zsh fail; unset or falsy values let those tests skip."""

from __future__ import annotations

import pytest

from tests.ci import skip_unless_ci, under_ci


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "True", "yes", "on", " true "])
def test_truthy_ci_values_count_as_ci(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", value)
    assert under_ci()
    with pytest.raises(pytest.fail.Exception, match="needs the browser tests to run: no chromium"):
        skip_unless_ci("browser tests", "no chromium")


@pytest.mark.parametrize("value", [None, "", "0", "false", "no"])
def test_unset_or_falsy_ci_skips(value: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    assert not under_ci()
    with pytest.raises(pytest.skip.Exception, match="no zsh"):
        skip_unless_ci("zsh hook tests", "no zsh")

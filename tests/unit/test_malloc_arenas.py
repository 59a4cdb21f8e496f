"""`cairn serve` caps the C allocator's arenas (RSS grew with one per call thread; see
`shared.local.server.cap_malloc_arenas`), unless the user set `MALLOC_ARENA_MAX` themselves."""

from __future__ import annotations

import sys

import pytest

from shared.local.server import cap_malloc_arenas


# Only glibc has mallopt: on other platforms the cap is a no-op, with nothing to observe.
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_the_arenas_are_capped_on_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert cap_malloc_arenas(8) is True  # 8: this test process keeps glibc's usual cap


def test_a_users_own_setting_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert cap_malloc_arenas() is False

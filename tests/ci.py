"""Whether the suite runs under CI, where a missing test dependency is a broken setup.

`.ci/run` exports `CI=1`; GitHub Actions sets `CI=true`; other runners say `yes`. Every test
that would skip for want of a tool (chromium, zsh) asks `require_under_ci` first, so all of
them read the variable the same way: any of those values makes the skip a failure.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

TRUTHY = frozenset({"1", "true", "yes", "on"})


def under_ci() -> bool:
    """True when `$CI` holds a truthy value (`1`, `true`, `yes`, `on`, any case)."""
    return os.environ.get("CI", "").strip().lower() in TRUTHY


def skip_unless_ci(what: str, reason: str) -> NoReturn:
    """Skip with `reason`; under CI fail instead, since CI installs what `what` needs."""
    if under_ci():
        pytest.fail(f"CI={os.environ['CI']} needs the {what} to run: {reason}")
    pytest.skip(reason)

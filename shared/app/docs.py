"""Writes the generated docs: `docs/tools.md` from the live tool catalog.

Run from the repository root after changing a tool:

    uv run --frozen python -m shared.app.docs

tests/unit/test_tools_reference.py fails while the file and the catalog disagree.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

from shared.app.groups import load_catalog
from shared.tools.reference import render_reference

TOOLS_REFERENCE: Final = Path(__file__).resolve().parents[2] / "docs" / "tools.md"


def tools_reference() -> str:
    """`docs/tools.md` as the live catalog renders it."""
    return render_reference(load_catalog())


def main() -> int:
    """Write `docs/tools.md`; say whether it changed."""
    text = tools_reference()
    before = TOOLS_REFERENCE.read_text() if TOOLS_REFERENCE.is_file() else None
    if before == text:
        sys.stdout.write(f"{TOOLS_REFERENCE} is up to date\n")
        return 0
    TOOLS_REFERENCE.write_text(text)
    sys.stdout.write(f"wrote {TOOLS_REFERENCE}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

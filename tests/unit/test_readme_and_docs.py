"""The README stays a front door, and no link in it or in docs/ leads nowhere.

README.md: at most 20,000 bytes, with `make serve` and `make test` in its first 40 lines.
Every relative link in README.md and docs/**/*.md names a file that exists, and an anchor into a
Markdown file names one of its headings (as GitHub spells the heading's anchor).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").rglob("*.md"))
MAX_README_BYTES = 20_000

# [text](target) and ![alt](target); the target ends at whitespace or the closing parenthesis.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)


def _prose(text: str) -> str:
    """`text` without code blocks and inline code, where a bracket is never a link."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def _links(path: Path) -> list[str]:
    return LINK.findall(_prose(path.read_text()))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to
    hyphens (`Auth per request` → `auth-per-request`)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").lower()
    text = "".join(char for char in text if char.isalnum() or char in " -_")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file (a repeated heading gets `-1`, `-2`, …)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text())):
        slug = _slug(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def test_the_readme_is_a_front_door() -> None:
    size = len(README.read_bytes())
    assert size <= MAX_README_BYTES, (
        f"README.md is {size:,} bytes; keep it at most {MAX_README_BYTES:,} by moving detail to "
        "docs/ (docs/README.md indexes them) and linking to it"
    )
    first = "\n".join(README.read_text().splitlines()[:40])
    for command in ("make serve", "make test"):
        assert command in first, f"README.md must show `{command}` in its first 40 lines"


def test_the_link_checker_finds_links_and_anchors() -> None:
    # Guards the checker itself: a pattern that matched nothing would pass every file.
    assert "docs/tools.md" in _links(README)
    assert "auth-per-request" in anchors(ROOT / "docs" / "infra" / "api-and-auth.md")
    assert _slug("The moto reference in `cairn bench store`") == (
        "the-moto-reference-in-cairn-bench-store"
    )
    assert _slug("The API bill: an HTTP API in dev, CloudFront + WAF to a function URL") == (
        "the-api-bill-an-http-api-in-dev-cloudfront--waf-to-a-function-url"
    )


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_to_a_file_that_exists(page: Path) -> None:
    broken: list[str] = []
    for link in _links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", link):  # https:, mailto: …
            continue
        target, _, anchor = link.partition("#")
        path = (page.parent / unquote(target)).resolve() if target else page
        if not path.exists():
            broken.append(
                f"{link} (no {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path})"
            )
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{link} (no heading with anchor #{anchor} in {path.name})")
    assert not broken, f"{page.relative_to(ROOT)} links to what does not exist: {broken}"

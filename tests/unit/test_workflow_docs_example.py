"""docs/workflows.md's example is a definition cairn accepts, with the shape the text describes."""

from __future__ import annotations

import json
import re
from pathlib import Path

from shared.workflows.definition import levels, parse_definition

DOC = Path(__file__).resolve().parents[2] / "docs" / "workflows.md"


def test_the_documented_example_is_valid_and_fans_out_then_in() -> None:
    block = re.search(r"```json\n(.*?)```", DOC.read_text(), re.S)
    assert block is not None
    example = json.loads(block.group(1))

    definition = parse_definition(example["definition"])

    # As the text says: collect, then draft and security-review at once, then publish.
    assert levels(definition) == [["collect"], ["draft", "security-review"], ["publish"]]
    draft = next(s for s in definition.steps if s.name == "draft")
    assert (draft.on_failure, draft.max_retries, draft.timeout_seconds) == ("retry", 2, 1800)

"""The input boundary and the storable-argument check, without a server (issue 18)."""

from __future__ import annotations

from typing import Any

import pytest

from shared.tools.json_input import BodyRefused, find_bad_text, nesting_depth, parse_body
from shared.tools.validation import MAX_ARGUMENT_DEPTH, find_unstorable


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"n": value}
    return value


@pytest.mark.parametrize(
    ("body", "depth"),
    [
        (b"1", 0),
        (b"[]", 1),
        (b'{"a": [1, {"b": 2}]}', 3),
        (b'{"a": "[[[[{{{{"}', 1),
        (b'{"a": "quote \\" then [[[["}', 1),
        (b'{"a": "backslash \\\\", "b": [[1]]}', 3),
        (b"[" * 200_000, 200_000),
        (b'["unterminated [[[', 4),
        # Escapes pair left to right: an escaped backslash ends no string, an odd run escapes
        # the quote after it, and an escaped bracket (malformed JSON) is not counted.
        (b'[["a\\\\", "[["]]', 2),
        (b'["a\\\\\\"[", [1]]', 2),
        (b'["\\u00e9\\n\\t", {"k": [1]}]', 3),
        (b"[\\[\\{", 1),
    ],
)
def test_nesting_depth_counts_brackets_outside_strings_only(body: bytes, depth: int) -> None:
    assert nesting_depth(body) == depth


@pytest.mark.timeout(20)
def test_an_unterminated_string_of_escaped_quotes_is_scanned_in_one_pass() -> None:
    # A string pattern with its escapes rescanned to the end from every quote: quadratic, an
    # 80 KB body took 39 s and a 1 MiB one would take hours. Two linear passes instead.
    body = b'["' + b'\\"' * 500_000
    assert nesting_depth(body) == 1
    with pytest.raises(BodyRefused):
        parse_body(body)


def test_a_body_nested_past_the_limit_is_refused_before_parsing_without_recursion() -> None:
    with pytest.raises(BodyRefused, match="500000 levels deep"):
        parse_body(b"[" * 500_000 + b"]" * 500_000)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"a": "\xff"}', "not valid UTF-8"),
        (b'{"a": "\xed\xaf\xb4"}', "not valid UTF-8"),  # a surrogate encoded as UTF-8
        (b'{"a": NaN}', "NaN"),
        (b'{"a": -Infinity}', "Infinity"),
        (b'{"a": "\\u12"}', "not valid JSON"),
        (b'{"a": ' + b"1" * 5000 + b"}", "not valid JSON"),
    ],
)
def test_a_body_that_is_not_strict_json_is_refused_with_the_reason(
    body: bytes, reason: str
) -> None:
    with pytest.raises(BodyRefused, match=reason):
        parse_body(body)


def test_lone_surrogates_and_overflowing_numbers_are_found_with_their_path() -> None:
    message = parse_body(b'{"params": {"arguments": {"tags": ["ok", "\\udbf4"]}}}')
    problem = find_bad_text(message)
    assert problem is not None
    assert problem.message.startswith("`params.arguments.tags[1]` holds a lone UTF-16 surrogate")

    overflow = find_bad_text(parse_body(b'{"x": {"y": 1e999}}'))
    assert overflow is not None
    assert overflow.path == ("x", "y")


def test_a_valid_surrogate_pair_is_accepted() -> None:
    assert find_bad_text(parse_body(b'{"a": "\\udbf4\\uddf7"}')) is None


@pytest.mark.parametrize(
    ("arguments", "field", "fragment"),
    [
        ({"metadata": {"": 1}}, "metadata", "empty key"),
        ({"payload": {"a": {"b\x00": 1}}}, "payload", "control character"),
        ({"content": "nul \x00"}, "content", "NUL"),
        ({"content": "\udbf4"}, "content", "surrogate"),
        ({"metadata": {"n": 1e300}}, "metadata", "storable range"),
        ({"metadata": {"n": [10**40]}}, "metadata", "38 significant digits"),
        ({"input_data": _nested(MAX_ARGUMENT_DEPTH)}, "input_data", "deeper than 32"),
        ({"": "x"}, "arguments", "empty key"),
    ],
)
def test_unstorable_arguments_are_named(
    arguments: dict[str, Any], field: str, fragment: str
) -> None:
    found = find_unstorable(arguments)
    assert found is not None
    assert found.field == field
    assert fragment in found.message


@pytest.mark.parametrize(
    "arguments",
    [
        {"content": "tab\tnewline\n escape \x1b emoji 🪨 pair \U0010d1f7"},
        {"metadata": {"n": 0, "f": 0.1, "big": 9.99e125, "neg": -(10**37), "none": None}},
        {"input_data": _nested(MAX_ARGUMENT_DEPTH - 1)},
        {"tags": [], "flag": True},
    ],
)
def test_storable_arguments_pass(arguments: dict[str, Any]) -> None:
    assert find_unstorable(arguments) is None

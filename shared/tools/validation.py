"""Turn pydantic validation errors into one message that names the field and the problem."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from shared.storage.values import storable_number_problem
from shared.tools.json_input import json_path, surrogate_problem


def describe_validation_error(exc: ValidationError) -> tuple[str | None, str]:
    """`(field, message)`: the first failing field and a message naming every problem.

    >>> # ("limit", "`limit`: Input should be less than or equal to 100 (got 500)")
    """
    problems: list[str] = []
    first_field: str | None = None
    for error in exc.errors(include_url=False):
        location = ".".join(str(part) for part in error["loc"]) or None
        if first_field is None:
            first_field = location
        got = error.get("input")
        detail = error["msg"]
        if error["type"] == "missing":
            problems.append(f"`{location}` is required")
        elif error["type"] == "extra_forbidden":
            problems.append(f"`{location}` is not a known argument")
        else:
            shown = repr(got) if not isinstance(got, dict | list) else type(got).__name__
            problems.append(f"`{location}`: {detail} (got {shown[:80]})")
    return first_field, "; ".join(problems) or "invalid arguments"


# -- What the stores can keep ------------------------------------------------------------------

MAX_ARGUMENT_DEPTH = 32  # DynamoDB keeps 32 levels of nested attributes
# Map keys become attribute names and JSON object keys in the stores: an empty one is refused by
# DynamoDB, and a control character in one can be neither indexed nor shown.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Unstorable:
    """An argument value the stores cannot keep: the argument, the path inside it, and why."""

    field: str
    path: str
    problem: str

    @property
    def message(self) -> str:
        return f"`{self.path}` {self.problem}"


def _string_problem(text: str) -> str | None:
    if "\x00" in text:
        return "holds a NUL character (U+0000), which the stores cannot keep: remove it"
    return surrogate_problem(text)


def _key_problem(key: str) -> str | None:
    if not key:
        return "has an empty key: every key of an object must be a non-empty string"
    found = _CONTROL.search(key)
    if found is not None:
        return (
            f"has a key with a control character (U+{ord(found.group()):04X}): "
            "keys must be printable text"
        )
    problem = surrogate_problem(key)
    return f"has a key that {problem}" if problem else None


def _number_problem(value: int | float) -> str | None:
    message = storable_number_problem(value)
    return f"holds {message}" if message else None


def find_unstorable(arguments: dict[str, Any]) -> Unstorable | None:
    """The first value in a tool's `arguments` that the stores cannot keep, or None.

    Refused: lone UTF-16 surrogates anywhere, NUL characters in strings, empty map keys and
    keys with control characters, numbers DynamoDB cannot hold (non-finite, beyond
    1E-130..9.99E+125, more than 38 significant digits), and nesting deeper than 32 levels (the
    arguments object is the first). Iterative, so any depth is safe to walk.

    >>> find_unstorable({"metadata": {"": 1}}).message
    '`metadata` has an empty key: every key of an object must be a non-empty string'
    """
    stack: list[tuple[Any, tuple[str | int, ...], int]] = [
        (value, (name,), 2) for name, value in arguments.items()
    ]
    for name in arguments:
        if key_problem := _key_problem(name):
            return Unstorable("arguments", "arguments", key_problem)
    while stack:
        value, path, depth = stack.pop()
        problem: str | None = None
        if isinstance(value, str):
            problem = _string_problem(value)
        elif isinstance(value, bool) or value is None:
            continue
        elif isinstance(value, int | float):
            problem = _number_problem(value)
        elif isinstance(value, dict | list):
            if depth > MAX_ARGUMENT_DEPTH:
                problem = (
                    f"nests objects and arrays deeper than {MAX_ARGUMENT_DEPTH} levels "
                    "(the arguments object counts as the first)"
                )
            elif isinstance(value, dict):
                for key, item in value.items():
                    if key_problem := _key_problem(key):
                        return Unstorable(str(path[0]), json_path(path), key_problem)
                    stack.append((item, (*path, key), depth + 1))
            else:
                stack.extend((item, (*path, i), depth + 1) for i, item in enumerate(value))
        if problem is not None:
            return Unstorable(str(path[0]), json_path(path), problem)
    return None

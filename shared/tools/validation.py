"""Turn pydantic validation errors into one message that names the field and the problem."""

from __future__ import annotations

from pydantic import ValidationError


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

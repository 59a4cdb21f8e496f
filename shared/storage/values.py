"""JSON-shaped values in and out of DynamoDB, with its limits turned into field errors.

DynamoDB takes numbers as `Decimal` (38 significant digits, magnitude 1E-130 to 9.99E+125) and
items up to 400 KB. boto3 raises on a Python float and DynamoDB rejects what is out of range or
too large; both would surface as an internal error. These helpers convert, and raise
`UnstorableValue` naming the caller's field instead: a storage error, which the tool boundary
(`shared.tools.dispatch`) answers as the `invalid_argument` error it names, so the storage layer
imports nothing of the tools.
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any

MAX_ITEM_BYTES = 380_000  # DynamoDB's 400 KB item limit, less room for keys and bookkeeping
_LARGEST = Decimal("9.99E+125")
_SMALLEST = Decimal("1E-130")


class UnstorableValue(Exception):
    """A value the store cannot keep (a number outside DynamoDB's range, an item past its size
    limit); `field` names the caller's argument that holds it, `message` says why."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


def storable_number_problem(value: int | float | Decimal) -> str | None:
    """Why DynamoDB cannot keep the number `value`, or None when it can.

    >>> storable_number_problem(1e300)
    'a number outside the storable range (1E-130 to 9.99E+125)'
    """
    try:
        number = value if isinstance(value, Decimal) else Decimal(repr(value))
    except (InvalidOperation, ValueError):  # ValueError: an int past Python's 4,300 digits
        return "a number that is not storable"
    if not number.is_finite():
        return "a number that is not finite"
    magnitude = abs(number)
    if magnitude and not (_SMALLEST <= magnitude <= _LARGEST):
        return "a number outside the storable range (1E-130 to 9.99E+125)"
    if len(number.as_tuple().digits) > 38:
        return "a number with more than 38 significant digits"
    return None


def _number(value: Decimal, field: str) -> Decimal:
    problem = storable_number_problem(value)
    if problem is not None:
        raise UnstorableValue(f"`{field}` holds {problem}", field=field)
    return value


def _convert(value: Any, field: str) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        try:
            number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
        except InvalidOperation as exc:
            raise UnstorableValue(f"a number in `{field}` is not storable", field=field) from exc
        return _number(number, field)
    if isinstance(value, Decimal):
        return _number(value, field)
    if isinstance(value, dict):
        return {k: _convert(v, field) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_convert(v, field) for v in value]
    return value


def to_dynamo(value: Any, field: str = "arguments") -> Any:
    """`value` with every number as a storable `Decimal`; `UnstorableValue(field)` otherwise."""
    return _convert(value, field)


def from_dynamo(value: Any) -> Any:
    """DynamoDB data back to JSON shapes (Decimal as int or float)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: from_dynamo(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_dynamo(v) for v in value]
    return value


def check_item_size(item: dict[str, Any], field: str) -> None:
    """Refuse an item DynamoDB would reject for size, naming the field that fills it."""
    size = len(json.dumps(item, default=str, ensure_ascii=False).encode())
    if size > MAX_ITEM_BYTES:
        raise UnstorableValue(
            f"`{field}` is too large to store: the record would be {size:,} bytes "
            f"(at most {MAX_ITEM_BYTES:,}, UTF-8)",
            field=field,
        )


def utf8_at_most(limit: int) -> Any:
    """A pydantic AfterValidator: the string's UTF-8 encoding is at most `limit` bytes."""
    from pydantic import AfterValidator

    def check(value: str | None) -> str | None:
        if value is not None and len(value.encode()) > limit:
            raise ValueError(f"must be at most {limit} bytes in UTF-8")
        return value

    return AfterValidator(check)

"""Powertools Logger, Metrics and Tracer: created once, imported everywhere.

A redaction filter on the logger makes sure no token secret reaches a log line, whatever a
caller passes in a message or an `extra` field.
"""

from __future__ import annotations

import logging
import re

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE_NAME = "cairn"
_SECRET = re.compile(r"cairn_sk_[A-Za-z0-9_\-]+")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',}]+")


def redact(text: str) -> str:
    """Mask token secrets and bearer credentials in `text`."""
    return _BEARER.sub(r"\1[REDACTED]", _SECRET.sub("cairn_sk_[REDACTED]", text))


class RedactSecrets(logging.Filter):
    """Masks secrets in the message, its arguments and every extra attribute of a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if record.args:
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        for name, value in list(vars(record).items()):
            if isinstance(value, str) and name not in {"msg", "name", "levelname", "pathname"}:
                setattr(record, name, redact(value))
        return True


logger = Logger(service=SERVICE_NAME)
logger.addFilter(RedactSecrets())
metrics = Metrics(namespace=SERVICE_NAME, service=SERVICE_NAME)
tracer = Tracer(service=SERVICE_NAME)

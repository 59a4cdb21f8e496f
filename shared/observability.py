"""Powertools Logger, Metrics and Tracer: created once, imported everywhere.

A redacting formatter makes sure no token secret reaches a log line, whatever a caller passes
in a message, an `extra` field (nested or not) or an exception.
"""

from __future__ import annotations

import logging
import re

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

SERVICE_NAME = "cairn"
_SECRET = re.compile(r"cairn_sk_[A-Za-z0-9_\-]+")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',}]+")


def redact(text: str) -> str:
    """Mask token secrets and bearer credentials in `text`."""
    return _BEARER.sub(r"\1[REDACTED]", _SECRET.sub("cairn_sk_[REDACTED]", text))


class RedactingFormatter(LambdaPowertoolsFormatter):
    """Powertools' JSON formatter, with secrets masked in the finished line.

    Masking the formatted line rather than the record's fields covers everything that can
    carry a secret: the message, its arguments, nested `extra` values and exception tracebacks.
    """

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


logger = Logger(service=SERVICE_NAME, logger_formatter=RedactingFormatter())
metrics = Metrics(namespace=SERVICE_NAME, service=SERVICE_NAME)
tracer = Tracer(service=SERVICE_NAME)

"""Powertools Logger, Metrics and Tracer: created once, imported everywhere.

The Tracer is created at the first invocation X-Ray samples (`SampledTracer`), not at import.

A redacting formatter makes sure no token secret reaches a log line, whatever a caller passes
in a message, an `extra` field (nested or not) or an exception.

In Lambda the log lines are Powertools' JSON and metrics are CloudWatch EMF. Elsewhere (`cairn
serve`, the CLI, tests) a person reads the console: each tool call is one short access line,
and metrics are dropped — EMF JSON on a terminal is noise, and nothing collects it there.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter
from aws_lambda_powertools.metrics import MetricResolution, MetricUnit

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

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


class WithoutWireBodies(logging.Filter):
    """Drops botocore's DEBUG records of request parameters and response bodies.

    The gateway invokes a group function with the tool call's raw arguments as the payload
    (`ingest_events`' events before the knowledge function redacts them), and botocore's
    `Making request ... with params` line writes that payload out at DEBUG: an operator turning
    a function's log level to DEBUG would put every captured secret in CloudWatch. The other
    botocore loggers (retries, endpoints, signing) keep their DEBUG lines.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.DEBUG


# A filter, not a level: it holds whatever level a deployment or a library sets later.
for _wire in ("botocore.endpoint", "botocore.parsers"):
    logging.getLogger(_wire).addFilter(WithoutWireBodies())


def running_in_lambda() -> bool:
    """True inside an AWS Lambda function (the runtime sets `AWS_LAMBDA_FUNCTION_NAME`)."""
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


TOOL_CALL_MESSAGE = "tool call"


class ConsoleFormatter(LambdaPowertoolsFormatter):
    """One short, redacted line per record for a person at a terminal.

    A tool call reads like an access log line, e.g.
    `10:27:49 tool memory_put ok 3.2 ms team=local request=9f…`; anything else is
    `10:27:49 WARNING <message>` (with its traceback, if any).
    """

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        if record.getMessage() == TOOL_CALL_MESSAGE and hasattr(record, "tool"):
            fields: dict[str, Any] = record.__dict__
            line = (
                f"{stamp} tool {fields.get('tool')} {fields.get('outcome')} "
                f"{fields.get('latency_ms')} ms team={fields.get('team')} "
                f"request={fields.get('request_id')}"
            )
        else:
            line = f"{stamp} {record.levelname} {record.getMessage()}"
            if record.exc_info:
                line += "\n" + self.formatException(record.exc_info)
        return redact(line)


class LambdaOnlyMetrics(Metrics):
    """Powertools Metrics that record only inside Lambda.

    Outside it Powertools would still print an EMF JSON blob to stdout whenever 100 values pile
    up (that print ignores POWERTOOLS_METRICS_DISABLED), in the middle of `cairn serve`'s console.
    """

    def add_metric(
        self,
        name: str,
        unit: MetricUnit | str,
        value: float,
        resolution: MetricResolution | int = 60,
    ) -> None:
        if running_in_lambda():
            super().add_metric(name=name, unit=unit, value=value, resolution=resolution)


logger = Logger(
    service=SERVICE_NAME,
    logger_formatter=RedactingFormatter() if running_in_lambda() else ConsoleFormatter(),
)
metrics = LambdaOnlyMetrics(namespace=SERVICE_NAME, service=SERVICE_NAME)
# Lambda sets it for each invocation: `Root=…;Parent=…;Sampled=1` when X-Ray records the call.
TRACE_HEADER_ENV = "_X_AMZN_TRACE_ID"
_P = ParamSpec("_P")
_R = TypeVar("_R")


def invocation_sampled() -> bool:
    """True when X-Ray records the current invocation (the sampling decision made upstream, by
    the stack's rule at API Gateway or the gateway function, travels in the trace header)."""
    return "Sampled=1" in os.environ.get(TRACE_HEADER_ENV, "")


class SampledTracer:
    """Powertools' Tracer, created at the first invocation X-Ray samples.

    Creating a Tracer imports the X-Ray SDK, and with it wrapt and asyncio: about 0.2x
    `import boto3` on every cold start of a function initialized on demand, though the stack's
    rule samples 5 % of requests (docs/infra/observability.md). An unsampled invocation has
    nothing to record, and botocore forwards the trace header from `_X_AMZN_TRACE_ID` by itself, so
    the calls a function makes stay in the caller's trace either way. For the same reason an
    unsampled invocation skips Powertools' tracing wrapper even once the Tracer exists (the gateway
    loads it into its snapshot): the subsegments it would build are never sent. (The `ColdStart`
    annotation marks a container's first traced invocation, not always its cold start.)
    """

    def __init__(self, service: str) -> None:
        self._service = service
        self._tracer: Tracer | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._tracer is not None

    def load(self) -> Tracer:
        """The Tracer, created now if it is not yet: for an init a snapshot keeps (SnapStart),
        where the import is paid once, before any request."""
        if self._tracer is not None:
            return self._tracer
        with self._lock:
            if self._tracer is None:
                # What `Tracer()` loads, named here because Powertools loads it lazily, out of
                # sight of the bundle's import scan (infra/imports.py).
                import aws_xray_sdk.core  # type: ignore[import-untyped]  # noqa: F401
                from aws_lambda_powertools import Tracer

                self._tracer = Tracer(service=self._service)
            return self._tracer

    def _for_this_invocation(self) -> Tracer | None:
        # X-Ray records nothing of an unsampled invocation: no subsegments to build.
        return self.load() if invocation_sampled() else None

    def capture_lambda_handler(self, handler: Callable[_P, _R]) -> Callable[_P, _R]:
        """Powertools' `capture_lambda_handler`, applied from the first sampled invocation."""
        return self._capture(handler, lambda tracer: tracer.capture_lambda_handler(handler))

    def capture_method(self, method: Callable[_P, _R]) -> Callable[_P, _R]:
        """Powertools' `capture_method`, applied from the first sampled invocation."""
        return self._capture(method, lambda tracer: tracer.capture_method(method))

    def _capture(
        self, function: Callable[_P, _R], decorate: Callable[[Tracer], Callable[..., Any]]
    ) -> Callable[_P, _R]:
        traced: list[Callable[..., Any]] = []  # decorated once, by the first traced call

        @functools.wraps(function)
        def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            tracer = self._for_this_invocation()
            if tracer is None:
                return function(*args, **kwargs)
            if not traced:
                traced.append(decorate(tracer))
            return cast("_R", traced[0](*args, **kwargs))

        return call


tracer = SampledTracer(SERVICE_NAME)


def lambda_handler(handler: Callable[_P, _R]) -> Callable[_P, _R]:
    """A Lambda entry point, observed as every cairn function's is: the invocation's context on
    each log line (cleared between invocations, so no key outlives its call), traced when X-Ray
    samples it, and its metrics flushed when it returns. (The gateway's stack of the same three
    adds the request's correlation id.)"""
    return logger.inject_lambda_context(
        tracer.capture_lambda_handler(metrics.log_metrics(handler)), clear_state=True
    )

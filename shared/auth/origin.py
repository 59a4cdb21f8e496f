"""The CloudFront origin check: behind `api=cloudfront` the only way in is the distribution.

CloudFront adds a secret header (`ORIGIN_HEADER`, its value generated at deploy into Secrets
Manager) to every request it forwards; the HTTP API's own `execute-api` URL stays reachable, so
the gateway refuses, before the app or any tool runs, every request that lacks the value. That
closes the way around the WAF. The value is compared in constant time and never logged.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Mapping
from typing import Any, Final

ORIGIN_HEADER: Final = "x-cairn-origin-verify"
REFUSED_BODY: Final = json.dumps({"message": "Forbidden: use the CloudFront endpoint"})


class OriginGuard:
    """`refusal(event)`: None when the event came through CloudFront, else the 403 to return."""

    def __init__(self, secret: str) -> None:
        if len(secret) < 16:
            raise ValueError("the origin header secret must be at least 16 characters")
        self._secret = secret.encode()

    def refusal(self, event: Mapping[str, Any]) -> dict[str, Any] | None:
        headers = event.get("headers") or {}
        # HTTP API events carry lower-case names; REST (v1) events the client's spelling.
        sent = next(
            (str(v) for k, v in headers.items() if str(k).lower() == ORIGIN_HEADER and v), ""
        )
        if sent and hmac.compare_digest(sent.encode(), self._secret):
            return None
        return {
            "statusCode": 403,
            "headers": {"content-type": "application/json"},
            "body": REFUSED_BODY,
            "isBase64Encoded": False,
        }


def build_origin_guard(secret_arn: str | None, fetch: Callable[[str], str]) -> OriginGuard | None:
    """The guard for `secret_arn` (its value read once, at cold start), or None without one."""
    if not secret_arn:
        return None
    return OriginGuard(fetch(secret_arn))

"""The console in AWS: API Gateway (REST, stage `v1`) proxy events through the gateway's Lambda
entry point, over HTTPS — sign-in, the Secure cookies, CSRF and relative redirects that stay
under the stage prefix. The group functions are not invoked here (tools/list is the gateway's
own), so this is the path up to the tools, as tests/functional/test_gateway_entry.py is for /mcp.
"""

from __future__ import annotations

import base64
import re
from types import ModuleType
from typing import Any
from urllib.parse import urlencode

from shared.config.settings import Settings
from tests.functional.gateway_lambda import GatewayContext, issued_token
from tests.functional.test_gateway_entry import entry  # noqa: F401 (fixture)

HOST = "abc123.execute-api.us-east-1.amazonaws.com"
NONCE = re.compile(r'name="csrf" value="([^"]+)"')


def _event(
    method: str, path: str, *, form: dict[str, str] | None = None, cookies: dict[str, str]
) -> dict[str, Any]:
    headers = {"Host": HOST, "X-Forwarded-Proto": "https", "Sec-Fetch-Site": "same-origin"}
    if cookies:
        headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
    body = None
    if form is not None:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        headers["Origin"] = f"https://{HOST}"
        body = base64.b64encode(urlencode(form).encode()).decode()
    return {
        "resource": "/console/{proxy+}",
        "path": path,
        "httpMethod": method,
        "headers": headers,
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": {"proxy": path.removeprefix("/console/")},
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/console/{proxy+}",
            "httpMethod": method,
            "path": f"/v1{path}",
            "stage": "v1",
            "requestId": "api-req-1",
            "identity": {"sourceIp": "203.0.113.7"},
        },
        "body": body,
        "isBase64Encoded": body is not None,
    }


def _headers(response: dict[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for key, value in (response.get("headers") or {}).items():
        found.setdefault(key.lower(), []).append(value)
    for key, values in (response.get("multiValueHeaders") or {}).items():
        found.setdefault(key.lower(), []).extend(v for v in values if v not in found[key.lower()])
    return found


def _text(response: dict[str, Any]) -> str:
    body = response.get("body") or ""
    return base64.b64decode(body).decode() if response.get("isBase64Encoded") else str(body)


def _cookie(response: dict[str, Any], name: str) -> tuple[str, str]:
    """The cookie's value and its whole Set-Cookie line."""
    for line in _headers(response).get("set-cookie", []):
        if line.startswith(f"{name}="):
            return line.split(";", 1)[0].split("=", 1)[1], line
    raise AssertionError(f"no {name} cookie in {_headers(response)}")


def test_signing_in_through_api_gateway_over_https(entry: ModuleType, aws: Settings) -> None:  # noqa: F811
    secret = issued_token(aws, "memory", "memory.review", name="reviewer")

    login = entry.handler(_event("GET", "/console/login", cookies={}), GatewayContext())
    nonce, nonce_line = _cookie(login, "cairn_console_login")
    page = _text(login)
    signed_in = entry.handler(
        _event(
            "POST",
            "/console/login",
            form={"token": secret, "csrf": NONCE.findall(page)[0]},
            cookies={"cairn_console_login": nonce},
        ),
        GatewayContext(),
    )
    session, session_line = _cookie(signed_in, "cairn_console")
    review = entry.handler(
        _event("GET", "/console/review", cookies={"cairn_console": session}), GatewayContext()
    )
    forged = entry.handler(
        _event(
            "POST",
            "/console/logout",
            form={"csrf": "0" * 64},
            cookies={"cairn_console": session},
        ),
        GatewayContext(),
    )

    assert login["statusCode"] == 200
    assert "default-src 'none'" in _headers(login)["content-security-policy"][0]
    assert 'action="login"' in page  # relative: /v1/console/login under the stage
    for line in (nonce_line, session_line):
        assert "Secure" in line  # HTTPS: API Gateway
        assert "HttpOnly" in line
        assert "SameSite=strict" in line
        # The browser sees /v1/console/…: a cookie scoped to /console would never come back.
        assert "Path=/v1/console" in line
    assert signed_in["statusCode"] == 303
    assert _headers(signed_in)["location"] == ["review"]  # resolves to /v1/console/review
    assert session == secret
    assert review["statusCode"] == 200
    assert "<h1>Review queue</h1>" in _text(review)
    assert forged["statusCode"] == 403
    assert "set-cookie" not in _headers(forged)


def test_signing_out_through_api_gateway_clears_the_cookie_on_the_stage_path(
    entry: ModuleType,  # noqa: F811
    aws: Settings,
) -> None:
    from shared.console.security import csrf_token

    secret = issued_token(aws, "memory")

    out = entry.handler(
        _event(
            "POST",
            "/console/logout",
            form={"csrf": csrf_token(secret)},
            cookies={"cairn_console": secret},
        ),
        GatewayContext(),
    )

    assert out["statusCode"] == 303
    value, line = _cookie(out, "cairn_console")
    assert value in {"", '""'}
    assert "Path=/v1/console" in line

"""CloudFormation custom resource: put cairn's index template into the search service.

Deployed on its own (this folder is the Lambda asset: no cairn code, no dependencies beyond
the Python runtime's botocore), so it never waits for the function bundle. The stack passes
the template body it computed from `shared.search.adapters.opensearch.index_template_body`;
this handler only signs and sends it.

Properties: `Endpoint` (https://...), `Service` (`aoss` or `es`), `Region`, `TemplateName`,
`Template` (the body as a JSON string).

- Create / Update: `PUT _index_template/<name>` (an upsert: a template that already exists is
  replaced, which is success). A 403 is retried with a backoff until the Lambda's time is
  nearly up: a data access policy created in the same deploy takes a while to apply.
- Delete: `DELETE _index_template/<name>`; 404 is success, and any other failure is logged
  and reported as success, so a stack deletion is never blocked by a template.
"""

from __future__ import annotations

import hashlib
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

# Waits between attempts on a 403 (seconds), repeating the last; bounded by the Lambda's
# remaining time (minus a margin to report back to CloudFormation).
BACKOFF = (2.0, 4.0, 8.0, 15.0, 30.0)
REPORT_MARGIN_MS = 20_000

Send = Callable[[str, str, bytes | None], tuple[int, str]]


class TemplateError(RuntimeError):
    """The search service refused the template; the message carries its answer."""


def signed_send(service: str, region: str) -> Send:
    """An HTTP sender signing each request with the function role's credentials (SigV4)."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.session import Session

    credentials = Session().get_credentials()
    if credentials is None:
        raise TemplateError("no AWS credentials in the function's environment")

    def send(method: str, url: str, body: bytes | None) -> tuple[int, str]:
        headers = {
            "Content-Type": "application/json",
            # Serverless requires the payload hash header on signed requests.
            "X-Amz-Content-SHA256": hashlib.sha256(body or b"").hexdigest(),
        }
        request = AWSRequest(method=method, url=url, data=body, headers=headers)
        SigV4Auth(credentials, service, region).add_auth(request)
        if not url.startswith("https://"):
            raise TemplateError(f"refusing a non-https search endpoint: {url}")
        http = urllib.request.Request(  # noqa: S310 (https only, checked above)
            url, data=body, headers=dict(request.headers.items()), method=method
        )
        try:
            with urllib.request.urlopen(http, timeout=30) as response:  # noqa: S310 (https)
                return int(response.status), response.read().decode()
        except urllib.error.HTTPError as error:
            return int(error.code), error.read().decode()

    return send


def apply(
    event: dict[str, Any],
    send: Send,
    *,
    sleep: Callable[[float], None] = time.sleep,
    remaining_ms: Callable[[], int] = lambda: 600_000,
) -> str:
    """Carry out one custom-resource request; returns the physical resource id."""
    props = event["ResourceProperties"]
    endpoint = str(props["Endpoint"]).rstrip("/")
    if not endpoint.startswith("https://"):
        endpoint = f"https://{endpoint}"
    name = str(props["TemplateName"])
    url = f"{endpoint}/_index_template/{name}"
    physical_id = f"{endpoint}/_index_template/{name}"
    if event["RequestType"] == "Delete":
        status, text = send("DELETE", url, None)
        if status >= 300 and status != 404:
            print(f"deleting {name} answered {status}: {text[:500]} (ignored)")
        return str(event.get("PhysicalResourceId") or physical_id)
    body = json.dumps(json.loads(str(props["Template"]))).encode()
    attempt = 0
    while True:
        status, text = send("PUT", url, body)
        if status < 300 or "resource_already_exists_exception" in text:
            return physical_id
        delay = BACKOFF[min(attempt, len(BACKOFF) - 1)]
        if status != 403 or remaining_ms() - delay * 1000 < REPORT_MARGIN_MS:
            raise TemplateError(f"PUT _index_template/{name} answered {status}: {text[:500]}")
        print(f"PUT _index_template/{name}: 403 (access policy propagating?); retry in {delay}s")
        sleep(delay)
        attempt += 1


def respond(event: dict[str, Any], status: str, physical_id: str, reason: str = "") -> None:
    """Report the outcome to CloudFormation's pre-signed response URL."""
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason[:3000] or status,
            "PhysicalResourceId": physical_id,
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "NoEcho": False,
            "Data": {},
        }
    ).encode()
    request = urllib.request.Request(  # noqa: S310 (CloudFormation's pre-signed https URL)
        event["ResponseURL"],
        data=body,
        headers={"Content-Type": "", "Content-Length": str(len(body))},
        method="PUT",
    )
    with urllib.request.urlopen(request, timeout=30):  # noqa: S310 (CloudFormation's https URL)
        pass


def handler(event: dict[str, Any], context: Any) -> None:
    props = event.get("ResourceProperties", {})
    fallback = str(event.get("PhysicalResourceId") or props.get("TemplateName", "template"))
    try:
        send = signed_send(str(props["Service"]), str(props["Region"]))
        physical_id = apply(event, send, remaining_ms=context.get_remaining_time_in_millis)
    except Exception as error:  # every failure must reach CloudFormation, or it waits an hour
        print(f"{event.get('RequestType')} failed: {error}")
        # A template left behind must not block a stack deletion (or its rollback).
        outcome = "SUCCESS" if event.get("RequestType") == "Delete" else "FAILED"
        respond(event, outcome, fallback, str(error))
        return
    respond(event, "SUCCESS", physical_id)

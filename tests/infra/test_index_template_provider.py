"""The index template custom resource's handler, with the search service and CloudFormation's
response URL scripted (no network, no synth)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.index_template_provider import handler as provider
from shared.search.adapters.opensearch import index_template_body

TEMPLATE = index_template_body("cairn-chunks", 1024, serverless=True)


def no_sleep(seconds: float) -> None:
    pytest.fail(f"slept {seconds} s where no retry was due")


def event(request_type: str = "Create", **props: Any) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResponseURL": "https://cloudformation-custom-resource-response.example/abc",
        "StackId": "arn:aws:cloudformation:us-east-1:111111111111:stack/cairn/1",
        "RequestId": "r1",
        "LogicalResourceId": "SearchIndexTemplate",
        "ResourceProperties": {
            "Endpoint": "https://abc.us-east-1.aoss.amazonaws.com",
            "Service": "aoss",
            "Region": "us-east-1",
            "TemplateName": "cairn-chunks-template",
            "Template": json.dumps(TEMPLATE),
            **props,
        },
    }


class Service:
    """The search service: answers each request with the next (status, body)."""

    def __init__(self, *answers: tuple[int, str]) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[str, str, Any]] = []

    def __call__(self, method: str, url: str, body: bytes | None) -> tuple[int, str]:
        self.requests.append((method, url, json.loads(body) if body else None))
        return self.answers.pop(0)


def test_create_puts_the_template_body_it_was_given() -> None:
    service = Service((200, '{"acknowledged":true}'))
    physical_id = provider.apply(event(), service, sleep=no_sleep)
    assert service.requests == [
        (
            "PUT",
            "https://abc.us-east-1.aoss.amazonaws.com/_index_template/cairn-chunks-template",
            TEMPLATE,
        )
    ]
    assert physical_id.endswith("/_index_template/cairn-chunks-template")


def test_a_managed_domain_endpoint_without_a_scheme_is_reached_over_https() -> None:
    service = Service((200, "{}"))
    provider.apply(event(Endpoint="search-cairn.us-east-1.es.amazonaws.com"), service)
    assert service.requests[0][1].startswith("https://search-cairn.us-east-1.es.amazonaws.com/")


def test_a_template_that_already_exists_is_success() -> None:
    service = Service((400, '{"error":{"type":"resource_already_exists_exception"}}'))
    provider.apply(event("Update"), service, sleep=no_sleep)


def test_a_403_is_retried_while_the_access_policy_propagates() -> None:
    slept: list[float] = []
    service = Service((403, "forbidden"), (403, "forbidden"), (200, "{}"))
    provider.apply(event(), service, sleep=slept.append)
    assert slept == list(provider.BACKOFF[:2])
    assert len(service.requests) == 3


def test_a_403_stops_before_the_function_runs_out_of_time_to_report() -> None:
    slept: list[float] = []
    service = Service(*[(403, "forbidden")] * 3)
    remaining = iter([300_000, 23_000, 10_000])
    with pytest.raises(provider.TemplateError, match="403"):
        provider.apply(event(), service, sleep=slept.append, remaining_ms=lambda: next(remaining))
    assert slept == [provider.BACKOFF[0]]


def test_a_refused_template_fails_at_once_with_the_services_answer() -> None:
    service = Service((400, '{"error":"mapper_parsing_exception: unknown engine"}'))
    with pytest.raises(provider.TemplateError, match="mapper_parsing_exception"):
        provider.apply(event(), service, sleep=no_sleep)


@pytest.mark.parametrize("answer", [(200, "{}"), (404, "not found"), (500, "boom")])
def test_delete_removes_the_template_and_never_fails(answer: tuple[int, str]) -> None:
    service = Service(answer)
    deleting = {**event("Delete"), "PhysicalResourceId": "old-id"}
    assert provider.apply(deleting, service) == "old-id"
    assert service.requests[0][0] == "DELETE"


def _run_handler(
    monkeypatch: pytest.MonkeyPatch, request: dict[str, Any], service: Service
) -> list[tuple[str, str]]:
    reported: list[tuple[str, str]] = []
    monkeypatch.setattr(provider, "signed_send", lambda service_name, region: service)
    monkeypatch.setattr(
        provider,
        "respond",
        lambda evt, status, physical_id, reason="": reported.append((status, reason)),
    )

    class Context:
        def get_remaining_time_in_millis(self) -> int:
            return 300_000

    provider.handler(request, Context())
    return reported


def test_the_handler_reports_a_failed_create_to_cloudformation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reported = _run_handler(monkeypatch, event(), Service((400, "bad mapping")))
    assert reported == [
        ("FAILED", "PUT _index_template/cairn-chunks-template answered 400: bad mapping")
    ]


def test_the_handler_reports_success_for_a_delete_even_when_it_breaks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Broken(Service):
        def __call__(self, method: str, url: str, body: bytes | None) -> tuple[int, str]:
            raise OSError("connection refused")

    reported = _run_handler(monkeypatch, event("Delete"), Broken())
    assert [status for status, _ in reported] == ["SUCCESS"]


@pytest.mark.parametrize("service", ["aoss", "es"])
def test_requests_are_sigv4_signed_for_the_named_service(
    monkeypatch: pytest.MonkeyPatch, service: str
) -> None:
    # Given credentials in the environment and an HTTP layer that records instead of sending
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    sent: list[Any] = []

    class Response:
        status = 200

        def read(self) -> bytes:
            return b"{}"

        def __enter__(self) -> Response:
            return self

        def __exit__(self, *_: object) -> None:
            return None

    def urlopen(request: Any, timeout: float) -> Response:
        sent.append(request)
        return Response()

    monkeypatch.setattr("urllib.request.urlopen", urlopen)
    # When the template is put
    send = provider.signed_send(service, "eu-west-1")
    status, _ = send("PUT", "https://search.example/_index_template/t", b'{"a":1}')
    # Then the request carries a SigV4 signature scoped to that service and the payload hash
    headers = {k.lower(): v for k, v in sent[0].header_items()}
    assert status == 200
    assert f"/eu-west-1/{service}/aws4_request" in headers["authorization"]
    assert headers["x-amz-content-sha256"] == (
        "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
    )


def test_a_plain_http_endpoint_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    send = provider.signed_send("es", "eu-west-1")
    with pytest.raises(provider.TemplateError, match="https"):
        send("PUT", "http://search.example/_index_template/t", b"{}")

"""Index setup on OpenSearch: the deploy-time template, what Serverless accepts, and the
first-write path (a concurrent create, a 403 while an access policy propagates).

Requests go through a real `opensearchpy.OpenSearch` client whose transport is scripted: it
answers each request in turn with a reply or raises the error opensearch-py raises for that
HTTP status. No network.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import requests
from opensearchpy import OpenSearch
from opensearchpy.exceptions import AuthorizationException, RequestError, TransportError

from shared.search.adapters.opensearch import (
    PROPAGATION_DELAYS,
    TITAN_V2_DIMENSIONS,
    OpenSearchIndex,
    index_body,
    index_template_body,
    index_template_name,
    serverless_violations,
    signed_client,
)
from shared.search.errors import IndexUnavailable

ALPHA_INDEX = "cairn-chunks-8ed3f6ad685b959ead7022518e1af76c"
TITAN_V2 = 1024


class Script:
    """The transport: each request gets the next reply; an exception reply is raised."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[str, str]] = []

    def __call__(self, method: str, url: str, **_: Any) -> Any:
        self.requests.append((method, url))
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def forbidden() -> AuthorizationException:
    return AuthorizationException(403, "security_exception", {"status": 403})


def already_exists() -> RequestError:
    return RequestError(400, "resource_already_exists_exception", {"status": 400})


def adapter(script: Script, slept: list[float]) -> OpenSearchIndex:
    client = OpenSearch(hosts=[{"host": "search.example", "port": 443}], use_ssl=True)
    client.transport.perform_request = script  # type: ignore[method-assign,assignment]
    return OpenSearchIndex(client, "cairn-chunks", TITAN_V2, sleep=slept.append)


# ---------------------------------------------------------------- the first write of a team


def test_a_concurrent_create_counts_as_the_index_existing() -> None:
    # Given another cold start creates the index between our HEAD and our PUT
    script = Script(False, already_exists())
    slept: list[float] = []
    index = adapter(script, slept)
    # When this container ensures the index
    created = index.ensure_index("alpha")
    # Then it is not an error, and the index is remembered (no second HEAD)
    assert created is False
    assert index.ensure_index("alpha") is False
    assert script.requests == [("HEAD", f"/{ALPHA_INDEX}"), ("PUT", f"/{ALPHA_INDEX}")]
    assert slept == []


def test_a_403_while_the_access_policy_propagates_is_retried_then_succeeds() -> None:
    # Given the first two HEADs are refused (policy not yet on every node), then it works
    script = Script(forbidden(), forbidden(), False, {"acknowledged": True})
    slept: list[float] = []
    # When the team's first write ensures its index
    created = adapter(script, slept).ensure_index("alpha")
    # Then it waited the first two backoff steps and created the index
    assert created is True
    assert slept == list(PROPAGATION_DELAYS[:2])
    assert script.requests[-1] == ("PUT", f"/{ALPHA_INDEX}")


def test_a_403_on_create_is_retried_too() -> None:
    script = Script(False, forbidden(), False, {"acknowledged": True})
    slept: list[float] = []
    assert adapter(script, slept).ensure_index("alpha") is True
    assert slept == [PROPAGATION_DELAYS[0]]


def test_a_lasting_403_gives_up_after_the_bounded_backoff_naming_the_policy() -> None:
    # Given every attempt is refused (the role is not in the policy at all)
    script = Script(*[forbidden() for _ in range(len(PROPAGATION_DELAYS) + 1)])
    slept: list[float] = []
    index = adapter(script, slept)
    # When ensuring the index, then it stops after the last delay with a clear error
    with pytest.raises(IndexUnavailable, match="access policy"):
        index.ensure_index("alpha")
    assert slept == list(PROPAGATION_DELAYS)
    assert sum(slept) < 10  # well inside a group function's 24 s
    assert script.replies == []


def test_another_bad_request_on_create_is_not_taken_for_success() -> None:
    script = Script(False, RequestError(400, "mapper_parsing_exception", {"status": 400}))
    index = adapter(script, [])
    with pytest.raises(IndexUnavailable, match="could not create"):
        index.ensure_index("alpha")
    # Not remembered: the next write tries again
    script.replies = [True]
    assert index.ensure_index("alpha") is False


def test_a_server_error_is_not_retried_as_if_it_were_propagation() -> None:
    slept: list[float] = []
    script = Script(TransportError(500, "internal", {}))
    with pytest.raises(IndexUnavailable):
        adapter(script, slept).ensure_index("alpha")
    assert slept == []


# ---------------------------------------------------------------- the deploy-time template


def test_the_template_covers_every_team_index_with_the_chunk_mapping() -> None:
    body = index_template_body("cairn-chunks", TITAN_V2, serverless=True)
    assert body["index_patterns"] == ["cairn-chunks-*"]
    assert body["template"] == index_body(TITAN_V2)
    assert index_template_name("cairn-chunks") == "cairn-chunks-template"
    # A team index name matches the pattern
    assert ALPHA_INDEX.startswith(body["index_patterns"][0].rstrip("*"))


def test_the_serverless_template_passes_the_serverless_constraints() -> None:
    body = index_template_body("cairn-chunks", TITAN_V2, serverless=True)
    assert serverless_violations(body, TITAN_V2) == []
    assert serverless_violations(index_body(TITAN_V2), TITAN_V2) == []


def test_the_managed_domain_template_pins_one_shard_without_replicas() -> None:
    body = index_template_body("cairn-chunks", TITAN_V2, serverless=False)
    settings = body["template"]["settings"]["index"]
    assert settings["number_of_shards"] == 1
    assert settings["number_of_replicas"] == 0
    # ... which Serverless would refuse: the check tells them apart
    assert any("number_of_shards" in p for p in serverless_violations(body, TITAN_V2))


def test_the_vector_field_is_a_faiss_cosine_hnsw_of_titan_v2s_dimension() -> None:
    vector = index_body(TITAN_V2)["mappings"]["properties"]["vector"]
    assert TITAN_V2 in TITAN_V2_DIMENSIONS
    assert vector["dimension"] == TITAN_V2
    assert vector["method"] == {
        "name": "hnsw",
        "space_type": "cosinesimil",
        "engine": "faiss",
        "parameters": {"m": 16, "ef_construction": 256},
    }


def _with(change: Any) -> dict[str, Any]:
    body = copy.deepcopy(index_body(TITAN_V2))
    change(body)
    return body


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            _with(lambda b: b["settings"]["index"].update(refresh_interval="1s")),
            "index.refresh_interval",
        ),
        (_with(lambda b: b["settings"].update(number_of_shards=2)), "index.number_of_shards"),
        (_with(lambda b: b["settings"].update({"index.number_of_replicas": 1})), "replicas"),
        (_with(lambda b: b["settings"]["index"].update(knn=False)), "index.knn"),
        (
            _with(
                lambda b: b["mappings"]["properties"]["vector"]["method"].update(engine="lucene")
            ),
            "engine 'lucene'",
        ),
        (
            _with(
                lambda b: b["mappings"]["properties"]["vector"]["method"].update(space_type="l1")
            ),
            "space_type 'l1'",
        ),
        (
            _with(lambda b: b["mappings"]["properties"]["vector"].update(dimension=384)),
            "dimension 384",
        ),
        (_with(lambda b: b["mappings"]["properties"].pop("vector")), "no knn_vector"),
    ],
)
def test_the_serverless_check_names_each_unsupported_part(
    body: dict[str, Any], problem: str
) -> None:
    problems = serverless_violations(body, TITAN_V2)
    assert any(problem in p for p in problems), problems


# ---------------------------------------------------------------- SigV4 per service


@pytest.mark.parametrize("service", ["aoss", "es"])
def test_the_client_signs_for_the_service_the_stack_names(
    monkeypatch: pytest.MonkeyPatch, service: str
) -> None:
    # Given role credentials in the environment (as in Lambda)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    # When the client for a domain endpoint (no scheme) or a collection endpoint is built
    endpoint = "search-cairn.eu-west-1.es.amazonaws.com"
    client = signed_client(
        endpoint if service == "es" else f"https://{endpoint}", "eu-west-1", service
    )
    (connection,) = client.transport.connection_pool.connections
    # Then it speaks HTTPS to the bare host and signs for that service
    assert connection.host == f"https://{endpoint}:443"
    request = requests.Request("GET", f"https://{endpoint}/_cat/indices").prepare()
    signed = connection.session.auth(request)
    assert f"/eu-west-1/{service}/aws4_request" in signed.headers["Authorization"]

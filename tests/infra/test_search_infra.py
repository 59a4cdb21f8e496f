"""Search infrastructure: a Serverless collection (staging, prod) or a one-node managed domain
(dev), the index template put at deploy by a custom resource, and the reranker grant.

The session's dev and prod synths cover the defaults; one more synth (dev with
`search=serverless` and `reranker=bedrock:...`) covers the options.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

import infra.search
from infra.config import ConfigError, DeployConfig
from infra.search import (
    DOMAIN_ACTIONS,
    DOMAIN_INSTANCE_TYPE,
    INDEX_PERMISSIONS,
    PROVIDER_HANDLER,
    TEMPLATE_ACTIONS,
    TEMPLATE_PERMISSIONS,
    Search,
)
from shared.config.names import Env
from shared.search.adapters.opensearch import index_template_body, serverless_violations
from tests.infra.support import Synth, checked_stack, nag_findings, synthesize

pytestmark = pytest.mark.infra

# Every function that indexes or queries: the curator re-indexes the memories it merges; sync
# (and the runner of its schedules) indexes the inbox; the knowledge group and its enricher
# index nodes; sessions write engrams (memories). The gateway and handoffs never search.
SEARCHERS = (
    "memory",
    "search",
    "curator",
    "sync",
    "sync_runner",
    "knowledge",
    "knowledge_enricher",
    "sessions",
)
RERANK_MODEL = "amazon.rerank-v1:0"


@pytest.fixture(scope="module")
def options(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """Dev with the non-default choices: a Serverless collection and a Bedrock reranker."""
    return synthesize(
        Path(tmp_path_factory.mktemp("cdk-search-options")),
        env="dev",
        developer="tester",
        search="serverless",
        reranker=f"bedrock:{RERANK_MODEL}",
    )


def _env(synth: Synth, function: str) -> dict[str, Any]:
    props = synth.resources[synth.functions()[function]]["Properties"]
    variables: dict[str, Any] = props["Environment"]["Variables"]
    return variables


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return action if isinstance(action, list) else [action]


def _only(synth: Synth, cfn_type: str) -> dict[str, Any]:
    (resource,) = synth.of_type(cfn_type).values()
    return resource


def _role_ids(synth: Synth, functions: tuple[str, ...]) -> set[str]:
    return {synth.role_of(function) for function in functions}


def _provider_role(synth: Synth) -> str:
    provider = synth.template_provider()
    assert provider is not None
    role: str = synth.resources[provider]["Properties"]["Role"]["Fn::GetAtt"][0]
    return role


def _provider_statements(synth: Synth) -> list[dict[str, Any]]:
    role = _provider_role(synth)
    assert not synth.resources[role]["Properties"].get("ManagedPolicyArns")
    statements: list[dict[str, Any]] = []
    for policy in synth.of_type("AWS::IAM::Policy").values():
        if {"Ref": role} in policy["Properties"]["Roles"]:
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def _template(synth: Synth) -> dict[str, Any]:
    return _only(synth, "Custom::SearchIndexTemplate")


# ---------------------------------------------------------------- the choice per environment


def test_dev_searches_on_a_managed_domain_and_prod_on_a_serverless_collection(
    dev: Synth, prod: Synth
) -> None:
    assert dev.of_type("AWS::OpenSearchServerless::Collection") == {}
    assert len(dev.of_type("AWS::OpenSearchService::Domain")) == 1
    assert prod.of_type("AWS::OpenSearchService::Domain") == {}
    assert len(prod.of_type("AWS::OpenSearchServerless::Collection")) == 1
    for function in SEARCHERS:
        assert _env(dev, function)[Env.SEARCH_SERVICE] == "es"
        assert _env(prod, function)[Env.SEARCH_SERVICE] == "aoss"


def test_the_search_choice_defaults_per_environment_and_names_the_key_when_wrong() -> None:
    def config(**context: str) -> DeployConfig:
        return DeployConfig.from_context({"developer": "tester", **context}.get)

    assert config(env="dev").search == "domain"
    assert config(env="staging").search == "serverless"
    assert config(env="prod").search == "serverless"
    assert config(env="dev", search="serverless").search == "serverless"
    with pytest.raises(ConfigError, match="`search`"):
        config(env="dev", search="elasticsearch")


def test_the_reranker_option_accepts_only_a_bedrock_model() -> None:
    def reranker(value: str) -> str | None:
        return DeployConfig.from_context({"env": "prod", "reranker": value}.get).reranker

    assert reranker(f"bedrock:{RERANK_MODEL}") == f"bedrock:{RERANK_MODEL}"
    assert reranker("none") is None
    for bad in ("cross-encoder", "bedrock:", "bedrock:Amazon Rerank", RERANK_MODEL):
        with pytest.raises(ConfigError, match="`reranker`"):
            reranker(bad)


# ---------------------------------------------------------------- the managed domain (dev)


def test_the_dev_domain_is_one_small_encrypted_https_only_node(dev: Synth) -> None:
    domain = _only(dev, "AWS::OpenSearchService::Domain")
    props = domain["Properties"]
    assert props["ClusterConfig"] == {
        "DedicatedMasterEnabled": False,
        "InstanceCount": 1,
        "InstanceType": DOMAIN_INSTANCE_TYPE,
        "ZoneAwarenessEnabled": False,
    }
    assert props["EngineVersion"].startswith("OpenSearch_2.")
    assert props["EBSOptions"] == {"EBSEnabled": True, "VolumeSize": 10, "VolumeType": "gp3"}
    assert props["EncryptionAtRestOptions"] == {"Enabled": True}
    assert props["NodeToNodeEncryptionOptions"] == {"Enabled": True}
    assert props["DomainEndpointOptions"]["EnforceHTTPS"] is True
    assert props["DomainEndpointOptions"]["TLSSecurityPolicy"].startswith("Policy-Min-TLS-1-2")
    assert "AdvancedSecurityOptions" not in props  # IAM only: no internal users
    assert domain["DeletionPolicy"] == "Delete"  # dev cleans up after itself


def test_a_dev_domain_publishes_no_logs_and_adds_no_log_resource_policy(dev: Synth) -> None:
    """A region holds 10 CloudWatch Logs resource policies; a publishing domain needs one, and
    every developer has a stack: the 10th would fail."""
    assert "LogPublishingOptions" not in _only(dev, "AWS::OpenSearchService::Domain")["Properties"]
    assert dev.of_type("AWS::Logs::ResourcePolicy") == {}


def test_a_staging_or_prod_domain_publishes_its_slow_and_error_logs_to_its_own_log_groups() -> None:
    stack = checked_stack("StagingDomain")
    Search(stack, "Search", config=DeployConfig(environment="staging", search="domain"))
    template = Template.from_stack(stack).to_json()["Resources"]
    (domain,) = (r for r in template.values() if r["Type"] == "AWS::OpenSearchService::Domain")
    published = domain["Properties"]["LogPublishingOptions"]
    assert set(published) == {"ES_APPLICATION_LOGS", "SEARCH_SLOW_LOGS", "INDEX_SLOW_LOGS"}
    groups = {option["CloudWatchLogsLogGroupArn"]["Fn::GetAtt"][0] for option in published.values()}
    for group in groups:
        assert template[group]["Type"] == "AWS::Logs::LogGroup"
        assert template[group]["Properties"]["RetentionInDays"] == 14
    (policy_resource,) = (r for r in template.values() if r["Type"] == "AWS::Logs::ResourcePolicy")
    policy = json.dumps(policy_resource["Properties"])
    assert '\\"Service\\":\\"es.amazonaws.com\\"' in policy
    assert "aws:SourceAccount" in policy
    assert all(group in policy for group in groups)


def test_the_domain_policy_names_only_the_searching_roles_and_the_template_provider(
    dev: Synth,
) -> None:
    statements = _only(dev, "AWS::OpenSearchService::Domain")["Properties"]["AccessPolicies"][
        "Statement"
    ]
    functions, provider = statements
    roles = {p["Fn::GetAtt"][0] for p in functions["Principal"]["AWS"]}
    assert roles == _role_ids(dev, SEARCHERS)
    assert functions["Action"] == list(DOMAIN_ACTIONS)
    assert json.dumps(functions["Resource"]).endswith(':domain/cairn-dev-tester/*"]]}')
    assert provider["Principal"] == {"AWS": [{"Fn::GetAtt": [_provider_role(dev), "Arn"]}]}
    assert provider["Action"] == list(TEMPLATE_ACTIONS)
    assert "/_index_template/cairn-chunks-template" in json.dumps(provider["Resource"])
    assert all(s["Effect"] == "Allow" for s in statements)
    assert "es:*" not in json.dumps(statements)


def test_searching_functions_reach_the_domains_indexes_by_http_method_only(dev: Synth) -> None:
    domain = dev.logical_id(dev.stack.search.resource)
    for function in SEARCHERS:
        statements = [
            s for s in dev.statements_of(function) if any(a.startswith("es:") for a in _actions(s))
        ]
        assert len(statements) == 1, function
        assert sorted(statements[0]["Action"]) == sorted(DOMAIN_ACTIONS)
        assert _env(dev, function)[Env.SEARCH_ENDPOINT] == {
            "Fn::GetAtt": [domain, "DomainEndpoint"]
        }
    for function in ("gateway", "handoffs", "orchestrator", "workflows"):
        actions = [a for st in dev.statements_of(function) for a in _actions(st)]
        assert not [a for a in actions if a.startswith("es:")], function


# ---------------------------------------------------------------- the collection (prod)


def _rendered(value: Any) -> str:
    """A template string with its tokens as words: a role's Arn `ROLE`, the stack id's
    suffix (infra.naming) `SUFFIX`."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(_rendered(part) for part in parts)
    if "Fn::GetAtt" in value:
        return "ROLE"
    assert "Fn::Select" in value, value
    return "SUFFIX"


def test_the_collection_is_a_vector_collection_encrypted_at_rest(prod: Synth) -> None:
    collection = _only(prod, "AWS::OpenSearchServerless::Collection")
    name = _rendered(collection["Properties"]["Name"])
    assert name == "cairn-prod-SUFFIX"  # retained: a new stack makes its own
    assert collection["Properties"]["Type"] == "VECTORSEARCH"
    policies = {
        p["Properties"]["Type"]: p["Properties"]
        for p in prod.of_type("AWS::OpenSearchServerless::SecurityPolicy").values()
    }
    assert {_rendered(p["Name"]) for p in policies.values()} == {name}
    encryption = json.loads(_rendered(policies["encryption"]["Policy"]))
    assert encryption["Rules"] == [
        {"ResourceType": "collection", "Resource": [f"collection/{name}"]}
    ]
    network = json.loads(_rendered(policies["network"]["Policy"]))
    assert all(r["ResourceType"] == "collection" for rule in network for r in rule["Rules"])


def test_prod_keeps_its_collection_with_standby_replicas_and_dev_saves_them(
    prod: Synth, options: Synth
) -> None:
    kept = _only(prod, "AWS::OpenSearchServerless::Collection")
    assert kept["DeletionPolicy"] == "Retain"
    # ...with the policies that encrypt it, open its endpoint and name who may reach its data:
    # without them a kept collection could be neither used nor deleted as it was.
    for policy_type in (
        "AWS::OpenSearchServerless::SecurityPolicy",
        "AWS::OpenSearchServerless::AccessPolicy",
    ):
        assert {p["DeletionPolicy"] for p in prod.of_type(policy_type).values()} == {"Retain"}
    assert kept["UpdateReplacePolicy"] == "Retain"
    assert kept["Properties"]["StandbyReplicas"] == "ENABLED"
    dropped = _only(options, "AWS::OpenSearchServerless::Collection")
    assert dropped["DeletionPolicy"] == "Delete"
    assert dropped["Properties"]["StandbyReplicas"] == "DISABLED"


def test_the_data_access_policy_names_the_searchers_and_gives_the_provider_templates_only(
    prod: Synth,
) -> None:
    document = _only(prod, "AWS::OpenSearchServerless::AccessPolicy")["Properties"]["Policy"]
    functions, provider = json.loads(_rendered(document))
    roles = [p for p in document["Fn::Join"][1] if isinstance(p, dict) and "Fn::GetAtt" in p]
    role_ids = [r["Fn::GetAtt"][0] for r in roles]
    # The searchers first, then the provider, each named once.
    assert set(role_ids[: len(SEARCHERS)]) == _role_ids(prod, SEARCHERS)
    assert role_ids[len(SEARCHERS) :] == [_provider_role(prod)]
    assert len(functions["Principal"]) == len(SEARCHERS)
    index_rule = next(r for r in functions["Rules"] if r["ResourceType"] == "index")
    assert index_rule["Permission"] == list(INDEX_PERMISSIONS)
    assert provider["Rules"] == [
        {
            "ResourceType": "collection",
            "Resource": ["collection/cairn-prod-SUFFIX"],
            "Permission": list(TEMPLATE_PERMISSIONS),
        }
    ]  # no index rule: the provider can read or write no document
    assert "aoss:*" not in json.dumps(document)
    collection = prod.logical_id(prod.stack.search.resource)
    for function in SEARCHERS:
        assert prod.actions_on(function, collection) == {"aoss:APIAccessAll"}


# ---------------------------------------------------------------- the index template at deploy


def test_the_index_template_is_put_at_deploy_after_the_access_policy(
    dev: Synth, prod: Synth
) -> None:
    for synth, serverless, policy in (
        (prod, True, "AWS::OpenSearchServerless::AccessPolicy"),
        (dev, False, "AWS::OpenSearchService::Domain"),
    ):
        template = _template(synth)
        props = template["Properties"]
        provider = synth.template_provider()
        assert props["ServiceToken"] == {"Fn::GetAtt": [provider, "Arn"]}
        assert props["Service"] == ("aoss" if serverless else "es")
        assert props["Endpoint"] == synth.stack.resolve(synth.stack.search.endpoint)
        assert props["TemplateName"] == "cairn-chunks-template"
        assert json.loads(props["Template"]) == index_template_body(
            "cairn-chunks", 1024, serverless=serverless
        )
        (policy_id,) = synth.of_type(policy)
        assert policy_id in template["DependsOn"]


def test_the_serverless_template_passes_what_serverless_accepts(prod: Synth) -> None:
    body = json.loads(_template(prod)["Properties"]["Template"])
    assert serverless_violations(body, 1024) == []
    vector = body["template"]["mappings"]["properties"]["vector"]
    assert vector["method"]["engine"] == "faiss"
    assert vector["dimension"] == 1024  # Titan Text Embeddings v2's default output


def test_a_template_serverless_would_refuse_fails_the_synth_not_the_deploy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a template body that pins shards (the managed domain's), offered to Serverless
    domain_body = index_template_body("cairn-chunks", 1024, serverless=False)
    monkeypatch.setattr(infra.search, "index_template_body", lambda *_, **__: domain_body)
    # When the search construct is built for a collection, then it refuses, naming the setting
    with pytest.raises(ValueError, match="number_of_shards"):
        infra.search.Search(
            checked_stack("SearchOnly"),
            "Search",
            config=DeployConfig(environment="prod", search="serverless"),
        )


def test_the_template_provider_runs_its_own_code_with_only_template_rights(
    dev: Synth, prod: Synth
) -> None:
    for synth in (dev, prod):
        provider = synth.resources[synth.template_provider() or ""]["Properties"]
        assert provider["Handler"] == PROVIDER_HANDLER
        assert provider["Timeout"] >= 120  # waits out a propagating access policy
        actions = {
            a
            for s in _provider_statements(synth)
            for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
        }
        expected = set(TEMPLATE_ACTIONS) if synth is dev else {"aoss:APIAccessAll"}
        assert actions == {"logs:CreateLogStream", "logs:PutLogEvents", *expected}
        # The provider is no tool group: the gateway cannot invoke it.
        provider_id = synth.template_provider()
        assert provider_id is not None
        assert provider_id not in json.dumps(synth.statements_of("gateway"))


# ---------------------------------------------------------------- the reranker grant


def test_without_a_reranker_no_function_may_rerank(dev: Synth, prod: Synth) -> None:
    for synth in (dev, prod):
        for function in synth.functions():
            assert Env.RERANKER not in _env(synth, function), function
            assert "bedrock:Rerank" not in json.dumps(synth.statements_of(function)), function


def test_a_bedrock_reranker_is_set_and_granted_on_exactly_its_model(options: Synth) -> None:
    for function in options.functions():
        statements = options.statements_of(function)
        env = _env(options, function)
        if function not in SEARCHERS:
            assert Env.RERANKER not in env, function
            assert "bedrock:Rerank" not in json.dumps(statements), function
            continue
        assert env[Env.RERANKER] == f"bedrock:{RERANK_MODEL}"
        # bedrock:Rerank has no resource-level form (CDK may merge it with X-Ray's "*").
        rerank = [s for s in statements if "bedrock:Rerank" in json.dumps(s["Action"])]
        assert [s["Resource"] for s in rerank] == ["*"]
        invoke = [
            json.dumps(s["Resource"]) for s in statements if s["Action"] == "bedrock:InvokeModel"
        ]
        model = [r for r in invoke if RERANK_MODEL in r]
        assert len(model) == 1, function
        assert f'::foundation-model/{RERANK_MODEL}"' in model[0]
        assert "*" not in model[0]


def test_the_optional_choices_are_cdk_nag_clean(options: Synth) -> None:
    assert nag_findings(options.stack) == []

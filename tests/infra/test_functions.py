"""Functions: one per tool group plus the gateway and the workers, each with a least-privilege
role. The curator worker's own reach and trigger are in test_workers."""

from __future__ import annotations

import json
import re
import tomllib

import pytest

from infra.bundling import LOCAL_ONLY_PACKAGES, requirements
from infra.functions import (
    EMBEDDING_MODEL_ID,
    GROUP_ACCESS,
    TRACER_CAPTURE_RESPONSE,
    WORKER_ACCESS,
)
from shared.app.groups import load_groups
from shared.config import names
from shared.config.names import Env
from tests.infra.support import RETENTION_DAYS, ROOT, Synth

pytestmark = pytest.mark.infra

GROUPS = names.TOOL_GROUPS
WORKERS = tuple(WORKER_ACCESS)  # functions no tool call reaches: the curator


def _env(synth: Synth, function: str) -> dict:
    variables: dict = synth.resources[synth.functions()[function]]["Properties"]["Environment"][
        "Variables"
    ]
    return variables


def test_there_is_exactly_one_function_per_tool_group_plus_the_gateway_and_the_workers(
    synth: Synth,
) -> None:
    assert sorted(synth.functions()) == sorted(("gateway", *GROUPS, *WORKERS))


def test_no_worker_is_a_tool_group() -> None:
    assert WORKERS == (
        "curator",
        "workflow_dispatcher",
        "sync_runner",
        "knowledge_enricher",
        "event_publisher",
    )
    assert not set(WORKERS) & set(GROUPS)


def test_the_group_access_map_covers_exactly_the_served_tool_groups() -> None:
    # A group in names but not in GROUP_ACCESS fails the synth; one left in GROUP_ACCESS after
    # its removal from names would silently linger: both directions are checked here.
    assert set(GROUP_ACCESS) == set(GROUPS) == set(load_groups())


@pytest.mark.parametrize("function", ["gateway", *GROUPS, *WORKERS])
def test_functions_run_python_3_12_or_later_on_arm64_with_active_tracing(
    dev: Synth, function: str
) -> None:
    props = dev.resources[dev.functions()[function]]["Properties"]
    assert props["Architectures"] == ["arm64"]
    runtime = re.fullmatch(r"python3\.(\d+)", props["Runtime"])
    assert runtime
    assert int(runtime.group(1)) >= 12
    assert props["TracingConfig"] == {"Mode": "Active"}
    assert props["Handler"] == f"functions.{function}.handler.handler"


@pytest.mark.parametrize("function", ["gateway", *GROUPS, *WORKERS])
def test_functions_carry_powertools_settings_and_their_environment(
    dev: Synth, function: str
) -> None:
    env = _env(dev, function)
    assert env[Env.POWERTOOLS_SERVICE_NAME] == f"cairn-{function}"
    assert env[Env.POWERTOOLS_METRICS_NAMESPACE] == names.SERVICE
    assert env[Env.LOG_LEVEL] == "INFO"
    assert env[Env.ENVIRONMENT] == "dev"
    assert env[Env.STACK_NAME] == "cairn-dev-tester"


@pytest.mark.parametrize(("env", "days"), RETENTION_DAYS.items())
@pytest.mark.parametrize("function", ["gateway", *GROUPS, *WORKERS])
def test_functions_log_to_their_own_log_group_kept_as_long_as_the_environment_says(
    request: pytest.FixtureRequest, function: str, env: str, days: int
) -> None:
    synth: Synth = request.getfixturevalue(env)
    props = synth.resources[synth.functions()[function]]["Properties"]
    log_group = synth.resources[props["LoggingConfig"]["LogGroup"]["Ref"]]
    assert log_group["Type"] == "AWS::Logs::LogGroup"
    assert log_group["Properties"]["RetentionInDays"] == days


def test_the_gateway_uses_snapstart_behind_a_published_alias(synth: Synth) -> None:
    gateway = synth.functions()["gateway"]
    assert synth.resources[gateway]["Properties"]["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    (alias,) = synth.of_type("AWS::Lambda::Alias").values()
    assert alias["Properties"]["FunctionName"] == {"Ref": gateway}
    version_id = alias["Properties"]["FunctionVersion"]["Fn::GetAtt"][0]
    assert synth.resources[version_id]["Properties"]["FunctionName"] == {"Ref": gateway}
    for function in (*GROUPS, *WORKERS):
        assert "SnapStart" not in synth.resources[synth.functions()[function]]["Properties"]


def test_the_gateway_may_invoke_exactly_the_group_functions(synth: Synth) -> None:
    invoke = [
        s
        for s in synth.statements_of("gateway")
        if "lambda:InvokeFunction" in json.dumps(s["Action"])
    ]
    assert len(invoke) == 1
    assert invoke[0]["Action"] == "lambda:InvokeFunction"
    functions = synth.functions()
    assert sorted(invoke[0]["Resource"], key=json.dumps) == sorted(
        ({"Fn::GetAtt": [functions[g], "Arn"]} for g in GROUPS), key=json.dumps
    )
    # Workers are no tool group: no tool call may reach them.
    for worker in WORKERS:
        assert functions[worker] not in json.dumps(synth.statements_of("gateway"))


def test_the_gateway_knows_each_group_function_by_name(synth: Synth) -> None:
    env = _env(synth, "gateway")
    functions = synth.functions()
    for group in GROUPS:
        assert env[Env.group_function(group)] == {"Ref": functions[group]}
    for worker in WORKERS:
        assert Env.group_function(worker) not in env
        assert functions[worker] not in json.dumps(env)


def test_only_group_functions_are_invocable_by_the_gateway_no_group_invokes(synth: Synth) -> None:
    # One exception: the sync group starts the sync runner (a large team's run) and nothing else.
    runner = synth.functions()[names.WORKER_SYNC_RUNNER]
    for function in (*GROUPS, *WORKERS):
        invokes = [
            s
            for s in synth.statements_of(function)
            if "lambda:InvokeFunction" in json.dumps(s["Action"])
        ]
        if function != names.GROUP_SYNC:
            assert invokes == [], function
            continue
        (statement,) = invokes
        assert statement["Resource"] == {"Fn::GetAtt": [runner, "Arn"]}


def test_the_gateway_reads_and_writes_only_the_tokens_table(synth: Synth) -> None:
    tables = {k: synth.logical_id(t) for k, t in synth.stack.data.tables.items()}
    assert {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:GetItem"} <= synth.actions_on(
        "gateway", tables[names.TABLE_TOKENS]
    )
    for logical_id, table_id in tables.items():
        if logical_id != names.TABLE_TOKENS:
            assert not synth.actions_on("gateway", table_id), logical_id
    assert _env(synth, "gateway")[Env.TOKENS_TABLE] == {"Ref": tables[names.TABLE_TOKENS]}


def test_the_memory_function_reaches_only_the_memories_table_and_appends_events(
    synth: Synth,
) -> None:
    tables = {k: synth.logical_id(t) for k, t in synth.stack.data.tables.items()}
    assert "dynamodb:PutItem" in synth.actions_on("memory", tables[names.TABLE_MEMORIES])
    # Domain events (proposals, conflicts) are appended to the event log: a put, no read.
    coordination = tables[names.TABLE_COORDINATION]
    assert synth.actions_on("memory", coordination) == {"dynamodb:PutItem"}
    assert _env(synth, "memory")[Env.COORDINATION_TABLE] == {"Ref": coordination}
    for logical_id, table_id in tables.items():
        if logical_id not in (names.TABLE_MEMORIES, names.TABLE_COORDINATION):
            assert not synth.actions_on("memory", table_id), logical_id
    dynamo_statements = [
        s for s in synth.statements_of("memory") if "dynamodb:" in json.dumps(s["Action"])
    ]
    for statement in dynamo_statements:
        assert json.dumps(statement["Resource"]).count("Arn") == 1


def test_the_handoffs_function_reaches_only_the_handoffs_table_appends_events_no_search(
    synth: Synth,
) -> None:
    tables = {k: synth.logical_id(t) for k, t in synth.stack.data.tables.items()}
    # A claim is one conditional UpdateItem; the open-handoff list is a Query on the index.
    actions = synth.actions_on(names.GROUP_HANDOFFS, tables[names.TABLE_HANDOFFS])
    assert {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"} <= actions
    coordination = tables[names.TABLE_COORDINATION]
    assert synth.actions_on(names.GROUP_HANDOFFS, coordination) == {"dynamodb:PutItem"}
    for logical_id, table_id in tables.items():
        if logical_id not in (names.TABLE_HANDOFFS, names.TABLE_COORDINATION):
            assert not synth.actions_on(names.GROUP_HANDOFFS, table_id), logical_id
    policy = json.dumps(synth.statements_of(names.GROUP_HANDOFFS))
    assert "aoss:" not in policy
    assert "bedrock:" not in policy
    assert Env.SEARCH_ENDPOINT not in _env(synth, names.GROUP_HANDOFFS)


def test_the_sync_function_reaches_only_the_inbox_prefix_of_the_bucket(synth: Synth) -> None:
    statements = synth.statements_of(names.GROUP_SYNC)
    s3 = [s for s in statements if "s3:" in json.dumps(s["Action"])]
    objects = next(s for s in s3 if "s3:PutObject" in json.dumps(s["Action"]))
    listing = next(s for s in s3 if "s3:ListBucket" in json.dumps(s["Action"]))

    assert sorted(objects["Action"]) == ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"]
    assert json.dumps(objects["Resource"]).endswith('"/inbox/*"]]}')
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["inbox/*"]}}
    assert len(s3) == 2
    bucket = synth.logical_id(synth.stack.data.bucket)
    assert _env(synth, names.GROUP_SYNC)[Env.ARTIFACTS_BUCKET] == {"Ref": bucket}
    tables = {k: synth.logical_id(t) for k, t in synth.stack.data.tables.items()}
    for logical_id, table_id in tables.items():
        reaches = bool(synth.actions_on(names.GROUP_SYNC, table_id))
        expected = logical_id in (names.TABLE_SYNC, names.TABLE_DOCUMENTS, names.TABLE_MEMORIES)
        assert reaches == expected, logical_id
    for group in (names.GROUP_MEMORY, names.GROUP_SEARCH, names.GROUP_HANDOFFS):
        assert "s3:" not in json.dumps(synth.statements_of(group)), group
    assert "inbox" not in json.dumps(synth.statements_of(names.GROUP_ORCHESTRATOR))


def test_the_search_function_only_reads_the_documents_and_memories_tables(synth: Synth) -> None:
    tables = {k: synth.logical_id(t) for k, t in synth.stack.data.tables.items()}
    for logical_id in (names.TABLE_DOCUMENTS, names.TABLE_MEMORIES):
        actions = synth.actions_on("search", tables[logical_id])
        assert {"dynamodb:GetItem", "dynamodb:Query"} <= actions
        assert not {a for a in actions if a.endswith(("PutItem", "UpdateItem", "DeleteItem"))}
    assert not synth.actions_on("search", tables[names.TABLE_TOKENS])


# The gateway hashes every bearer token it checks; the orchestrator hashes the agent tokens
# agent.register mints. No other function needs the pepper.
PEPPER_READERS = ("gateway", names.GROUP_ORCHESTRATOR)


def test_only_the_gateway_and_the_orchestrator_read_the_token_pepper_secret(
    synth: Synth,
) -> None:
    secret = synth.logical_id(synth.stack.data.token_pepper)
    for function in PEPPER_READERS:
        assert "secretsmanager:GetSecretValue" in synth.actions_on(function, secret), function
        assert _env(synth, function)[Env.TOKEN_PEPPER_SECRET_ARN] == {"Ref": secret}
    for function in (*GROUPS, *WORKERS):
        if function in PEPPER_READERS:
            continue
        assert not synth.actions_on(function, secret), function
        assert Env.TOKEN_PEPPER_SECRET_ARN not in _env(synth, function)


def test_no_function_copies_its_responses_into_traces(synth: Synth) -> None:
    # Responses carry team data, and agent.register's a new token secret (orchestrator reply
    # and gateway response body): Powertools Tracer must not record any of them in X-Ray.
    for function in ("gateway", *GROUPS, *WORKERS):
        assert _env(synth, function)[TRACER_CAPTURE_RESPONSE] == "false", function


def test_the_orchestrator_reaches_its_tables_the_pepper_and_the_artifacts_prefix_only(
    synth: Synth,
) -> None:
    group = names.GROUP_ORCHESTRATOR
    tables = {k: synth.logical_id(t) for k, t in synth.stack.data.tables.items()}
    # Registration is a transaction on the coordination table, the task queue a Query on its
    # index; minting and revoking tokens are writes and an index Query on the tokens table.
    for logical_id in (names.TABLE_COORDINATION, names.TABLE_TOKENS):
        actions = synth.actions_on(group, tables[logical_id])
        assert {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"} <= actions
    mine = (names.TABLE_COORDINATION, names.TABLE_TOKENS, names.TABLE_KNOWLEDGE)
    for logical_id, table_id in tables.items():
        if logical_id not in mine:
            assert not synth.actions_on(group, table_id), logical_id
    # Finished tasks become knowledge events (seed 003): writes only, never a read.
    knowledge = synth.actions_on(group, tables[names.TABLE_KNOWLEDGE])
    assert "dynamodb:PutItem" in knowledge
    assert not knowledge & {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:Scan"}
    env = _env(synth, group)
    assert env[Env.COORDINATION_TABLE] == {"Ref": tables[names.TABLE_COORDINATION]}
    assert env[Env.TOKENS_TABLE] == {"Ref": tables[names.TABLE_TOKENS]}
    policy = json.dumps(synth.statements_of(group))
    assert "aoss:" not in policy
    assert "bedrock:" not in policy
    assert "lambda:" not in policy
    assert Env.SEARCH_ENDPOINT not in env
    # artifact.put / artifact.get: objects under artifacts/ only, never the sync inbox.
    s3 = [s for s in synth.statements_of(group) if "s3:" in json.dumps(s["Action"])]
    assert len(s3) == 2
    assert all("inbox" not in json.dumps(s) for s in s3)
    assert any(json.dumps(s["Resource"]).endswith('"/artifacts/*"]]}') for s in s3)
    listing = next(s for s in s3 if "s3:ListBucket" in json.dumps(s["Action"]))
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["artifacts/*"]}}
    bucket = synth.logical_id(synth.stack.data.bucket)
    assert env[Env.ARTIFACTS_BUCKET] == {"Ref": bucket}


@pytest.mark.parametrize(
    "group",
    [g for g in GROUPS if GROUP_ACCESS[g].search] + [w for w in WORKERS if WORKER_ACCESS[w].search],
)
def test_search_groups_may_invoke_only_the_titan_embedding_model(synth: Synth, group: str) -> None:
    # Model invocation only; listing models (the sessions group's catalog) is tested below.
    bedrock = [
        s for s in synth.statements_of(group) if "bedrock:InvokeModel" in json.dumps(s["Action"])
    ]
    assert len(bedrock) == 1
    assert bedrock[0]["Action"] == "bedrock:InvokeModel"
    assert f'::foundation-model/{EMBEDDING_MODEL_ID}"' in json.dumps(bedrock[0]["Resource"])
    assert "*" not in json.dumps(bedrock[0]["Resource"])
    env = _env(synth, group)
    search = synth.stack.search
    assert env[Env.SEARCH_ENDPOINT] == synth.stack.resolve(search.endpoint)
    assert env[Env.SEARCH_SERVICE] == search.service
    assert env[Env.EMBEDDING_MODEL_ID] == EMBEDDING_MODEL_ID


def test_only_the_sessions_group_lists_bedrock_models_and_reads_its_catalog_from_bedrock(
    synth: Synth,
) -> None:
    for group in GROUPS:
        listing = [
            s
            for s in synth.statements_of(group)
            if "bedrock:ListFoundationModels" in json.dumps(s["Action"])
        ]
        if group == names.GROUP_SESSIONS:
            assert len(listing) == 1
            assert listing[0]["Resource"] == "*"  # the action has no resource-level form
            assert _env(synth, group)[Env.MODEL_CATALOG] == "bedrock"
        else:
            assert listing == [], group


def test_the_gateway_reaches_neither_bedrock_nor_the_collection(synth: Synth) -> None:
    statements = json.dumps(synth.statements_of("gateway"))
    assert "bedrock:" not in statements
    assert "aoss:" not in statements


def test_the_gateway_advertises_its_public_url(dev: Synth, prod: Synth) -> None:
    dev_url = json.dumps(_env(dev, "gateway")[Env.PUBLIC_URL])
    assert "execute-api" in dev_url
    assert dev.stack.api.http_api is not None  # dev: an HTTP API (docs/infra/api-and-auth.md)
    assert dev.logical_id(dev.stack.api.http_api) in dev_url
    assert _env(prod, "gateway")[Env.PUBLIC_URL] == "https://mcp.example.com"


def _pinned() -> set[str]:
    return {
        line.split("==")[0].strip().lower()
        for line in requirements().splitlines()
        if "==" in line and not line.lstrip().startswith("#")
    }


def test_lambda_requirements_leave_out_local_only_packages() -> None:
    pinned = _pinned()
    assert {"boto3", "pydantic", "fastapi", "mangum", "aws-lambda-powertools"} <= pinned
    assert not pinned & set(LOCAL_ONLY_PACKAGES)
    assert "moto" not in pinned  # a dev dependency: tests and the store bench only
    assert "werkzeug" not in pinned  # moto's own dependencies stay out with it
    assert "huggingface-hub" not in pinned  # the tokenizers' hub client (and tqdm) go too


def test_no_bundled_package_depends_on_a_pruned_one() -> None:
    # The bundle installs the export with --no-deps: a kept package that needs a pruned one
    # would fail to import in Lambda.
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    pinned = _pinned()
    for package in lock["package"]:
        if package["name"] in pinned:
            needs = {d["name"] for d in package.get("dependencies", [])}
            assert not needs & set(LOCAL_ONLY_PACKAGES), package["name"]

"""`cairn bench cost`: the AWS bill per 1M typical tool calls and the idle bill per month.

Three inputs, none of them typed in by hand here:

- **the stack**: the CDK app synthesized for dev and prod (`bundle=false`, no AWS calls). Memory
  sizes, the API type (REST or HTTP, and a CloudFront distribution in front), the WAF and its
  rules, the X-Ray sampling rule, the log
  levels, the search capacity (Serverless OCUs or a managed domain's instances) and the count of
  alarms, dashboards, KMS keys and secrets are read from the template;
- **the code**: the real gateway Lambda handler (`functions/gateway/handler.py`, Mangum and
  FastAPI) and the real group handlers, run warm in this process on moto, the Invoke between
  them routed by a botocore hook. A typical mix of calls (below) is driven through them. Another
  botocore hook counts every DynamoDB call and the read/write units it costs, and times it;
  every byte the handlers log (Powertools JSON, EMF metrics) is counted at each environment's
  log level;
- **the price sheet** `shared/bench/prices.json`, with its date and region.

Durations: the CPU time measured here (moto's own time inside each DynamoDB call subtracted)
plus an in-region round trip per DynamoDB call and an overhead per Lambda Invoke, both from the
sheet's `assumptions`. The gateway is billed while it waits for the group, as Lambda bills it.

The mix is the DynamoDB-only path of `cairn bench gateway`'s operations: memory_get by key,
tools/list, store_handoff and list_handoffs. Tools that embed or query the search index
(memory_put, search, recall) add Bedrock and OpenSearch latency this process cannot measure; the
index's capacity is in the idle figure.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, redirect_stdout
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from shared.auth.cache import slice_size
from shared.auth.models import DEFAULT_RATE_LIMIT_PER_MINUTE
from shared.bench.wire import tool_call

PRICES_FILE: Final = Path(__file__).with_name("prices.json")
MILLION: Final = 1_000_000
GB: Final = 1024**3
# X-Ray's default rule when the stack defines none: the first request each second, then 5 %.
# X-Ray's default rule, and Lambda's fixed sampling where a function starts a trace with active
# tracing (no custom rule changes it): the first request each second, then 5 %.
XRAY_DEFAULT: Final = (1, 0.05)
XRAY_LAMBDA: Final = (1, 0.05)
# The traffic every figure is given at: a quiet team's 1 call a second (where Lambda's fixed
# reservoir traces nearly every call) and a busy one's 10.
RATES: Final = (1.0, 10.0)
# The token limit the rate limiter reserves slices of (shared.auth): what a default token costs.
RATE_LIMIT_PER_MINUTE: Final = DEFAULT_RATE_LIMIT_PER_MINUTE
# The measured calls run under a 100k/min token, whose slices (1,000 requests) cost ~0 writes.
MEASURED_RATE_LIMIT_PER_MINUTE: Final = 100_000
# Typical tool calls (weights sum to 1): reads dominate an agent's traffic.
MIX: Final[Mapping[str, float]] = {
    "memory_get": 0.5,
    "tools/list": 0.1,
    "store_handoff": 0.15,
    "list_handoffs": 0.25,
}
LOG_LEVELS: Final = {"DEBUG": 10, "INFO": 20, "WARN": 30, "WARNING": 30, "ERROR": 40, "FATAL": 50}


# --- what one call costs and what the stack holds ---------------------------------------------


@dataclass(frozen=True)
class CallProfile:
    """One average tool call, as billed."""

    gateway_ms: float  # the gateway's billed duration (it waits for the group)
    group_ms: float  # the group's billed duration, per call that reaches a group
    group_share: float  # share of calls that invoke a group (tools/list does not)
    read_units: float  # DynamoDB read request units
    write_units: float  # DynamoDB write request units
    log_bytes: float  # bytes ingested by CloudWatch Logs (both functions)


@dataclass(frozen=True)
class SearchCapacity:
    """What the search index costs while nobody searches."""

    kind: str  # "serverless" (OCUs) or "domain" (instances)
    ocus: float = 0.0
    instances: tuple[tuple[str, int], ...] = ()  # (instance type, count)
    storage_gb: float = 0.0


@dataclass(frozen=True)
class Deployment:
    """The billable shape of one synthesized environment."""

    environment: str
    api: str  # "rest", "http" or "url" (a Lambda function URL: no API Gateway)
    gateway_memory_mb: int
    group_memory_mb: int
    xray_reservoir: int  # traces per second recorded before the rate applies
    xray_rate: float
    waf_rules: int  # -1: no web ACL
    search: SearchCapacity
    alarms: int
    dashboards: int
    kms_keys: int
    secrets: int
    application_log_level: str = "INFO"
    platform_logs: bool = True  # START/END/REPORT lines (system log level INFO or unset)
    log_sample_rate: float = 0.0  # POWERTOOLS_LOGGER_SAMPLE_RATE: share of calls at DEBUG
    # One access-log line per request: about as long as its format, each `$context.x` standing
    # in for a value of similar length.
    access_log_bytes: int = 0
    # A CloudFront distribution in front of the API (api=cloudfront): every call is also a
    # CloudFront HTTPS request.
    cloudfront: bool = False
    # Share of requests the WAF writes a log record of (1.0: no filter; 0: only blocked ones,
    # which a normal call is not).
    waf_logged_share: float = 0.0
    # The gateway's X-Ray mode ("Active", "PassThrough"; "" none): who decides sampling.
    tracing: str = "Active"

    @property
    def waf(self) -> bool:
        return self.waf_rules >= 0


def xray_share(deployment: Deployment, calls_per_second: float) -> float:
    """Share of calls X-Ray records at a steady `calls_per_second` under the sampling rule."""
    if calls_per_second <= 0:
        return 0.0
    reservoir = min(float(deployment.xray_reservoir), calls_per_second)
    rest = calls_per_second - reservoir
    return (reservoir + rest * deployment.xray_rate) / calls_per_second


def cost_per_million(
    profile: CallProfile,
    deployment: Deployment,
    prices: Mapping[str, Any],
    *,
    calls_per_second: float,
) -> dict[str, float]:
    """Dollars per 1M tool calls, by line item, plus `total`.

    Example: 1M calls of 10 ms on a 1,024 MB gateway alone cost 1M x 0.01 s x 1 GB x
    $0.0000133334 = $0.133 of Lambda duration.
    """
    lam = prices["lambda_arm64"]
    gb_seconds = (
        profile.gateway_ms / 1000 * deployment.gateway_memory_mb / 1024
        + profile.group_share * profile.group_ms / 1000 * deployment.group_memory_mb / 1024
    )
    api = prices["api_gateway"]
    items = {
        # A function URL has no charge of its own (the Lambda invocation is billed below).
        "api_gateway": {"rest": api["rest_per_million"], "http": api["http_per_million"]}.get(
            deployment.api, 0.0
        ),
        "lambda_requests": (1 + profile.group_share) * lam["requests_per_million"],
        "lambda_duration": gb_seconds * MILLION * lam["gb_second"],
        "dynamodb": profile.read_units * prices["dynamodb_on_demand"]["read_units_per_million"]
        + profile.write_units * prices["dynamodb_on_demand"]["write_units_per_million"],
        "xray": xray_share(deployment, calls_per_second)
        * prices["xray"]["traces_recorded_per_million"],
        "logs": profile.log_bytes * MILLION / GB * prices["cloudwatch"]["logs_ingested_per_gb"],
        "waf": prices["waf"]["requests_per_million"] if deployment.waf else 0.0,
        "waf_logs": deployment.waf_logged_share
        * prices["assumptions"].get("waf_log_bytes_per_request", 0)
        * MILLION
        / GB
        * prices["cloudwatch"]["logs_ingested_per_gb"]
        if deployment.waf
        else 0.0,
        "cloudfront": prices["cloudfront"]["https_requests_per_million"]
        if deployment.cloudfront
        else 0.0,
    }
    items["total"] = sum(items.values())
    return {k: round(v, 4) for k, v in items.items()}


def idle_per_month(deployment: Deployment, prices: Mapping[str, Any]) -> dict[str, float]:
    """Dollars per month with no traffic at all, by line item, plus `total`."""
    hours = prices["assumptions"]["hours_per_month"]
    search = deployment.search
    if search.kind == "serverless":
        search_cost = search.ocus * prices["opensearch_serverless"]["ocu_hour"] * hours
    else:
        table = prices["opensearch_domain"]["instance_hour"]
        unknown = [kind for kind, _ in search.instances if kind not in table]
        if unknown:
            raise KeyError(
                f"prices.json has no opensearch_domain.instance_hour for {', '.join(unknown)}: "
                "add its us-east-1 on-demand price and update the sheet's date"
            )
        search_cost = sum(table[kind] * count * hours for kind, count in search.instances)
        search_cost += search.storage_gb * prices["opensearch_domain"]["gp3_gb_month"]
    waf = prices["waf"]
    items = {
        "search": search_cost,
        "waf": waf["web_acl_per_month"] + deployment.waf_rules * waf["rule_per_month"]
        if deployment.waf
        else 0.0,
        "alarms": deployment.alarms * prices["cloudwatch"]["alarm_per_month"],
        "dashboards": deployment.dashboards * prices["cloudwatch"]["dashboard_per_month"],
        "kms_keys": deployment.kms_keys * prices["kms"]["key_per_month"],
        "secrets": deployment.secrets * prices["secrets_manager"]["secret_per_month"],
    }
    items["total"] = sum(items.values())
    return {k: round(v, 2) for k, v in items.items()}


# --- reading the synthesized template ----------------------------------------------------------


def deployment_from_template(environment: str, template: Mapping[str, Any]) -> Deployment:
    """The billable shape of a synthesized stack (its CloudFormation template as JSON)."""
    resources: dict[str, dict[str, Any]] = template["Resources"]

    def of_type(cfn_type: str) -> list[dict[str, Any]]:
        return [r.get("Properties", {}) for r in resources.values() if r["Type"] == cfn_type]

    functions = {
        props["Handler"].split(".")[1]: props for props in of_type("AWS::Lambda::Function")
    }
    gateway = functions["gateway"]
    groups = [functions[name] for name in _tool_groups() if name in functions]
    if of_type("AWS::ApiGateway::RestApi"):
        api = "rest"
    elif any(p.get("ProtocolType") == "HTTP" for p in of_type("AWS::ApiGatewayV2::Api")):
        api = "http"
    elif of_type("AWS::Lambda::Url"):
        api = "url"
    else:
        raise ValueError("the template has no REST API, HTTP API or function URL")
    tracing = str(gateway.get("TracingConfig", {}).get("Mode", ""))
    rules = of_type("AWS::XRay::SamplingRule")
    if api == "rest":
        # The stage decides and passes its decision down: the stack's rule (the one with the
        # lowest priority number wins in X-Ray), else X-Ray's default.
        reservoir, rate = XRAY_DEFAULT
        if rules:
            rule = min(
                (r["SamplingRule"] for r in rules), key=lambda r: int(r.get("Priority", 10000))
            )
            reservoir, rate = int(rule["ReservoirSize"]), float(rule["FixedRate"])
    elif tracing == "Active":
        # The gateway starts the trace: Lambda's fixed sampling, whatever rule exists.
        reservoir, rate = XRAY_LAMBDA
    else:
        reservoir, rate = 0, 0.0  # PassThrough: only requests arriving sampled
    acls = of_type("AWS::WAFv2::WebACL")
    waf_logging = of_type("AWS::WAFv2::LoggingConfiguration")
    waf_logged_share = (
        0.0
        if not waf_logging
        or all(c.get("LoggingFilter", {}).get("DefaultBehavior") == "DROP" for c in waf_logging)
        else 1.0
    )
    logging = gateway.get("LoggingConfig", {})
    env = gateway.get("Environment", {}).get("Variables", {})
    return Deployment(
        environment=environment,
        api=api,
        gateway_memory_mb=int(gateway.get("MemorySize", 128)),
        group_memory_mb=max(int(g.get("MemorySize", 128)) for g in groups),
        xray_reservoir=reservoir,
        xray_rate=rate,
        waf_rules=sum(len(a.get("Rules", [])) for a in acls) if acls else -1,
        search=_search_capacity(of_type),
        alarms=len(of_type("AWS::CloudWatch::Alarm")),
        dashboards=len(of_type("AWS::CloudWatch::Dashboard")),
        kms_keys=len(of_type("AWS::KMS::Key")),
        secrets=len(of_type("AWS::SecretsManager::Secret")),
        application_log_level=str(
            logging.get("ApplicationLogLevel") or env.get("LOG_LEVEL") or "INFO"
        ).upper(),
        platform_logs=str(logging.get("SystemLogLevel", "INFO")).upper() in ("DEBUG", "INFO"),
        log_sample_rate=float(env.get("POWERTOOLS_LOGGER_SAMPLE_RATE", 0) or 0),
        cloudfront=bool(of_type("AWS::CloudFront::Distribution")),
        waf_logged_share=waf_logged_share,
        tracing=tracing,
        access_log_bytes=sum(
            len(str(stage.get(key, {}).get("Format", "")))
            for cfn_type, key in (
                ("AWS::ApiGateway::Stage", "AccessLogSetting"),
                ("AWS::ApiGatewayV2::Stage", "AccessLogSettings"),
            )
            for stage in of_type(cfn_type)
        ),
    )


def _search_capacity(of_type: Callable[[str], list[dict[str, Any]]]) -> SearchCapacity:
    domains = of_type("AWS::OpenSearchService::Domain")
    if domains:
        instances: list[tuple[str, int]] = []
        storage = 0.0
        for domain in domains:
            cluster = domain.get("ClusterConfig", {})
            count = int(cluster.get("InstanceCount", 1))
            instances.append((cluster.get("InstanceType", "r6g.large.search"), count))
            if cluster.get("DedicatedMasterEnabled"):
                instances.append(
                    (cluster["DedicatedMasterType"], int(cluster.get("DedicatedMasterCount", 3)))
                )
            ebs = domain.get("EBSOptions", {})
            storage += float(ebs.get("VolumeSize", 0)) * count
        return SearchCapacity(kind="domain", instances=tuple(instances), storage_gb=storage)
    collections = of_type("AWS::OpenSearchServerless::Collection")
    # A vector collection's floor: 0.5 OCU indexing + 0.5 search, doubled by standby replicas.
    ocus = sum(
        2.0 if c.get("StandbyReplicas", "ENABLED") == "ENABLED" else 1.0 for c in collections
    )
    return SearchCapacity(kind="serverless", ocus=ocus)


def _tool_groups() -> tuple[str, ...]:
    from shared.config import names

    return tuple(names.TOOL_GROUPS)


# Prod deploys with its custom domain, which its default front (CloudFront to the gateway's
# function URL) needs; the names are placeholders (nothing here is priced by the domain).
PROD_DOMAIN: Final = {
    "domain_name": "mcp.example.com",
    "certificate_arn": "arn:aws:acm:us-east-1:111111111111:certificate/bench",
}
# What is priced: each environment as it deploys, and prod's alternatives beside its default
# in the same run: the HTTP API behind CloudFront (`api=cloudfront`) and the REST API with the
# regional WAF on its stage (`api=rest`).
VARIANTS: Final[Mapping[str, Mapping[str, str]]] = {
    "dev": {"env": "dev"},
    # The pipeline's rehearsal, always on: its idle bill is part of running prod.
    "staging": {"env": "staging"},
    # Staging sized down (`-c search=domain`: one small node instead of the OCUs).
    "staging_domain": {"env": "staging", "search": "domain"},
    "prod": {"env": "prod", **PROD_DOMAIN},
    "prod_cloudfront_http": {"env": "prod", "api": "cloudfront", **PROD_DOMAIN},
    "prod_rest": {"env": "prod", "api": "rest", **PROD_DOMAIN},
}


def synthesize(environment: str, **extra: str) -> dict[str, Any]:
    """The stack's template for `environment` (plus `extra` context), as `cdk synth` builds it
    (no bundling)."""
    from infra.app import build_app

    root = Path(__file__).resolve().parents[2]
    base = json.loads((root / "cdk.json").read_text())["context"]
    context = {**base, "bundle": "false", "env": environment, "developer": "bench", **extra}
    with tempfile.TemporaryDirectory(prefix="cairn-bench-cost-") as outdir:
        app, stack = build_app(context, outdir=outdir)
        assembly = app.synth()
        template: dict[str, Any] = assembly.get_stack_by_name(stack.stack_name).template
    return template


# --- measuring the code ------------------------------------------------------------------------


@dataclass
class _Meter:
    """DynamoDB calls, units and time, split by whether a group function was running."""

    in_group: bool = False
    calls: dict[str, int] = field(default_factory=lambda: {"gateway": 0, "group": 0})
    seconds: dict[str, float] = field(default_factory=lambda: {"gateway": 0.0, "group": 0.0})
    read_units: float = 0.0
    write_units: float = 0.0
    group_seconds: float = 0.0
    invocations: int = 0
    _started: list[float] = field(default_factory=list)

    @property
    def side(self) -> str:
        return "group" if self.in_group else "gateway"

    def before(self, **_: Any) -> None:
        self._started.append(time.perf_counter())

    def after(self, http_response: Any, parsed: Mapping[str, Any], model: Any, **_: Any) -> None:
        elapsed = time.perf_counter() - self._started.pop()
        self.calls[self.side] += 1
        self.seconds[self.side] += elapsed
        reads, writes = request_units(model.name, parsed, getattr(self, "_params", {}))
        self.read_units += reads
        self.write_units += writes

    def params(self, params: Mapping[str, Any], **_: Any) -> None:
        self._params = params


def request_units(
    operation: str, response: Mapping[str, Any], params: Mapping[str, Any]
) -> tuple[float, float]:
    """DynamoDB on-demand (read, write) request units one call costs.

    Reads: 4 KB units of what was read (at least one), halved when eventually consistent;
    writes: 1 KB units of the item written (at least one), doubled inside a transaction.
    """

    def size(value: Any) -> int:
        return len(json.dumps(value, default=str).encode())

    consistent = 1.0 if params.get("ConsistentRead") else 0.5
    if operation == "GetItem":
        return max(1, math.ceil(size(response.get("Item", {})) / 4096)) * consistent, 0.0
    if operation in ("Query", "Scan"):
        read = sum(size(item) for item in response.get("Items", []))
        return max(1, math.ceil(read / 4096)) * consistent, 0.0
    if operation == "BatchGetItem":
        items = [i for rows in response.get("Responses", {}).values() for i in rows]
        return sum(max(1, math.ceil(size(i) / 4096)) for i in items) * consistent, 0.0
    if operation in ("PutItem", "UpdateItem", "DeleteItem"):
        written = size(params.get("Item", params.get("Key", {})))
        return 0.0, float(max(1, math.ceil(written / 1024)))
    if operation == "TransactWriteItems":
        return 0.0, 2.0 * len(params.get("TransactItems", []))
    if operation == "TransactGetItems":
        return 2.0 * len(params.get("TransactItems", [])), 0.0
    if operation == "BatchWriteItem":
        rows = [r for reqs in params.get("RequestItems", {}).values() for r in reqs]
        return 0.0, float(len(rows))
    return 0.0, 0.0


class _ByteCounter(io.TextIOBase):
    """A text stream that keeps only how many UTF-8 bytes were written to it."""

    def __init__(self) -> None:
        self.bytes = 0

    def write(self, text: str) -> int:
        self.bytes += len(text.encode())
        return len(text)

    def writable(self) -> bool:
        return True


@dataclass(frozen=True)
class Measured:
    """Per-operation medians from the in-process run, before any price or latency is applied."""

    operation: str
    gateway_cpu_ms: float
    group_cpu_ms: float
    invokes_group: bool
    dynamodb_calls_gateway: float
    dynamodb_calls_group: float
    read_units: float
    write_units: float
    log_bytes: dict[str, float]  # by application log level
    # The same event through a bare FastAPI route under Mangum, in the same run: what the
    # gateway's own work is measured against (issue 17's "warm overhead" ratio).
    bare_route_ms: float = 0.0

    @property
    def overhead_ratio(self) -> float:
        """Gateway CPU (no I/O, no group) ÷ the bare route."""
        return round(self.gateway_cpu_ms / self.bare_route_ms, 1) if self.bare_route_ms else 0.0


class _Context:
    def __init__(self, name: str) -> None:
        self.function_name = f"cairn-{name}"
        self.function_version = "1"
        self.memory_limit_in_mb = 1024
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:cairn-{name}"
        self.aws_request_id = "bench"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 30_000


def rest_api_event(body: Mapping[str, Any], token: str) -> dict[str, Any]:
    """An API Gateway proxy event (payload 1.0: REST, and HTTP APIs configured for it)."""
    headers = {
        "Host": "abc123.execute-api.us-east-1.amazonaws.com",
        "X-Forwarded-Proto": "https",
        "Content-Type": "application/json",
        "Accept": "application/json",
        "Authorization": f"Bearer {token}",
    }
    return {
        "resource": "/mcp",
        "path": "/mcp",
        "httpMethod": "POST",
        "headers": headers,
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/mcp",
            "httpMethod": "POST",
            "path": "/v1/mcp",
            "stage": "v1",
            "requestId": "bench",
            "identity": {"sourceIp": "203.0.113.7"},
        },
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


@contextmanager
def _lambda_environment(group_names: Sequence[str]) -> Iterator[None]:
    """The environment the stack gives the gateway, and Lambda's own markers, for this run."""
    from shared.config import names

    pepper = "bench-pepper"
    values = {
        "AWS_LAMBDA_FUNCTION_NAME": "cairn-bench",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        names.Env.ENVIRONMENT: "bench",
        names.Env.STORAGE: "dynamodb",
        names.Env.TOKEN_PEPPER: pepper,
        names.Env.PUBLIC_URL: "https://abc123.execute-api.us-east-1.amazonaws.com/v1",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "false",
        **{names.Env.group_function(g): f"cairn-{g}" for g in group_names},
    }
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def measure(calls: int = 60, levels: Sequence[str] = ("INFO", "WARN")) -> list[Measured]:
    """Drive the mix through the real gateway and group handlers on moto; medians per operation."""
    import importlib

    import boto3
    from botocore.awsrequest import AWSResponse, HTTPHeaders
    from moto import mock_aws

    from shared import runtime
    from shared.auth.models import TokenRequest
    from shared.auth.wiring import build_token_service
    from shared.config import names
    from shared.config.settings import Settings
    from shared.config.tables import create_tables
    from shared.observability import RedactingFormatter, logger

    meter = _Meter()
    group_of = {"memory_get": names.GROUP_MEMORY}
    group_of.update({"store_handoff": names.GROUP_HANDOFFS, "list_handoffs": names.GROUP_HANDOFFS})
    with mock_aws(), _lambda_environment(sorted(set(group_of.values()))):
        # On the default session every client is made from (moto resets it when it starts),
        # before any client exists: each DynamoDB call of both handlers passes through here.
        boto3.setup_default_session()
        session = boto3.DEFAULT_SESSION
        assert session is not None
        events = session.events
        events.register("provide-client-params.dynamodb", meter.params)
        events.register("before-call.dynamodb", meter.before)
        events.register("after-call.dynamodb", meter.after)
        settings = Settings.from_env()
        runtime.configure(settings)
        create_tables(boto3.client("dynamodb", region_name=settings.region))
        token = (
            build_token_service(settings)
            .issue(
                TokenRequest(
                    team="bench",
                    name="bench",
                    scopes=("admin",),
                    rate_limit_per_minute=MEASURED_RATE_LIMIT_PER_MINUTE,
                )
            )
            .secret
        )
        sys.modules.pop("functions.gateway.handler", None)
        gateway = importlib.import_module("functions.gateway.handler")
        handlers = {
            g: importlib.import_module(f"functions.{g}.handler").handler
            for g in set(group_of.values())
        }

        def route(request: Any, **_: Any) -> AWSResponse:
            function = request.url.split("/functions/")[1].split("/")[0]
            group = function.removeprefix("cairn-")
            meter.in_group, began = True, time.perf_counter()
            try:
                reply = handlers[group](json.loads(request.body), _Context(group))
            finally:
                meter.in_group = False
                meter.group_seconds += time.perf_counter() - began
                meter.invocations += 1
            raw = json.dumps(reply).encode()
            return AWSResponse(request.url, 200, HTTPHeaders(), _RawBody(raw))

        gateway.invoker._client.meta.events.register_first("before-send.lambda.Invoke", route)
        # JSON lines as in Lambda, into a counter instead of stdout.
        counter = _ByteCounter()
        logger.registered_handler.setFormatter(RedactingFormatter())
        logger.registered_handler.setStream(counter)  # type: ignore[attr-defined]

        numbers = iter(range(10**9))
        bodies: dict[str, Callable[[], dict[str, Any]]] = {
            "memory_get": lambda: tool_call("memory_get", {"key": "fact-7"}),
            "tools/list": lambda: {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            "store_handoff": lambda: tool_call(
                "store_handoff", {"title": f"bench {next(numbers)}", "document_md": _HANDOFF}
            ),
            "list_handoffs": lambda: tool_call("list_handoffs", {}),
            # Not in the mix: the floor of the gateway's own work.
            "ping": lambda: {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        }
        bare_ms = _bare_route_ms(
            rest_api_event({"jsonrpc": "2.0", "id": 1, "method": "ping"}, token)
        )

        def call(body: dict[str, Any]) -> None:
            with redirect_stdout(counter):  # EMF metrics are printed
                response = gateway.handler(rest_api_event(body, token), _Context("gateway"))
            reply = json.loads(response["body"])
            if response["statusCode"] != 200 or "error" in reply or reply["result"].get("isError"):
                raise RuntimeError(f"{body.get('method')} failed: {response['body'][:300]}")

        call(tool_call("memory_put", {"key": "fact-7", "content": "Service 7 runs in region 2."}))
        results: list[Measured] = []
        for operation, body in bodies.items():
            for _ in range(5):  # warm: first imports, first query of a team, token cache
                call(body())
            samples: dict[str, list[float]] = {
                k: [] for k in ("total", "group", "ddb_gw_s", "ddb_group_s", "gw", "grp", "r", "w")
            }
            logged: dict[str, list[float]] = {level: [] for level in levels}
            for n in range(calls):
                level = levels[n % len(levels)]
                logger.setLevel(level)
                before = asdict(meter)
                bytes_before = counter.bytes
                began = time.perf_counter()
                call(body())
                total = time.perf_counter() - began
                logged[level].append(counter.bytes - bytes_before)
                samples["total"].append(total)
                samples["group"].append(meter.group_seconds - before["group_seconds"])
                samples["ddb_gw_s"].append(meter.seconds["gateway"] - before["seconds"]["gateway"])
                samples["ddb_group_s"].append(meter.seconds["group"] - before["seconds"]["group"])
                samples["gw"].append(meter.calls["gateway"] - before["calls"]["gateway"])
                samples["grp"].append(meter.calls["group"] - before["calls"]["group"])
                samples["r"].append(meter.read_units - before["read_units"])
                samples["w"].append(meter.write_units - before["write_units"])
            gateway_cpu = [
                t - g - d
                for t, g, d in zip(
                    samples["total"], samples["group"], samples["ddb_gw_s"], strict=True
                )
            ]
            group_cpu = [
                g - d for g, d in zip(samples["group"], samples["ddb_group_s"], strict=True)
            ]
            results.append(
                Measured(
                    operation=operation,
                    gateway_cpu_ms=round(statistics.median(gateway_cpu) * 1000, 3),
                    group_cpu_ms=round(statistics.median(group_cpu) * 1000, 3),
                    invokes_group=operation in group_of,
                    # Means, not medians: a cache refresh every Nth call is part of the bill.
                    dynamodb_calls_gateway=statistics.fmean(samples["gw"]),
                    dynamodb_calls_group=statistics.fmean(samples["grp"]),
                    read_units=statistics.fmean(samples["r"]),
                    write_units=statistics.fmean(samples["w"]),
                    log_bytes={lvl: statistics.fmean(v) for lvl, v in logged.items()},
                    bare_route_ms=bare_ms,
                )
            )
        logger.setLevel("INFO")
    runtime.configure(Settings())
    return results


def _bare_route_ms(event: dict[str, Any], calls: int = 300) -> float:
    """Median ms of `event` through a one-route FastAPI app under Mangum (the floor)."""
    from fastapi import FastAPI
    from mangum import Mangum

    app = FastAPI()

    @app.post("/mcp")
    async def mcp() -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": 1, "result": {}}

    handler = Mangum(app, lifespan="off")
    context = _Context("bare")
    for _ in range(20):
        handler(event, context)  # type: ignore[arg-type]
    timings = []
    for _ in range(calls):
        began = time.perf_counter()
        handler(event, context)  # type: ignore[arg-type]
        timings.append(time.perf_counter() - began)
    return round(statistics.median(timings) * 1000, 4)


class _RawBody(io.BytesIO):
    """A raw HTTP body as botocore reads it: streamed for parsing, read for a blob payload."""

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.getvalue()


_HANDOFF = (
    "## Start & intent\nx\n## Journey\nx\n## Current state\nx\n## What’s left\nx\n"
    "## Open questions\nx\n"
)


def profile(
    measured: Sequence[Measured],
    deployment: Deployment,
    prices: Mapping[str, Any],
    mix: Mapping[str, float] = MIX,
) -> CallProfile:
    """The mix's average billed call in `deployment`: CPU measured + modelled I/O."""
    assumptions = prices["assumptions"]
    rtt = float(assumptions["dynamodb_round_trip_ms"])
    invoke = float(assumptions["lambda_invoke_overhead_ms"])
    platform = float(assumptions["lambda_platform_log_bytes_per_invocation"])
    level = _nearest_level(deployment.application_log_level, measured[0].log_bytes)
    gateway_ms = group_ms = share = reads = writes = log_bytes = 0.0
    for m in measured:
        weight = mix.get(m.operation, 0.0)
        group = m.group_cpu_ms + m.dynamodb_calls_group * rtt if m.invokes_group else 0.0
        # Lambda bills each invocation rounded up to the millisecond.
        group_billed = math.ceil(group) if m.invokes_group else 0.0
        gateway = m.gateway_cpu_ms + m.dynamodb_calls_gateway * rtt
        if m.invokes_group:
            gateway += invoke + group_billed
        gateway_ms += weight * math.ceil(gateway)
        group_ms += weight * group_billed
        share += weight * (1.0 if m.invokes_group else 0.0)
        reads += weight * m.read_units
        writes += weight * m.write_units
        invocations = 2 if m.invokes_group else 1
        sampled = deployment.log_sample_rate * m.log_bytes.get("DEBUG", m.log_bytes[level])
        app_bytes = (1 - deployment.log_sample_rate) * m.log_bytes[level] + sampled
        log_bytes += weight * (
            app_bytes + (platform * invocations if deployment.platform_logs else 0)
        )
    log_bytes += deployment.access_log_bytes
    # The rate limiter writes one reservation (1 WCU) per slice of a token's per-minute limit;
    # measured under a 100k/min token, priced for a default one.
    writes += 1 / slice_size(RATE_LIMIT_PER_MINUTE) - 1 / slice_size(MEASURED_RATE_LIMIT_PER_MINUTE)
    return CallProfile(
        gateway_ms=round(gateway_ms, 2),
        group_ms=round(group_ms / share, 2) if share else 0.0,
        group_share=round(share, 3),
        read_units=round(reads, 3),
        write_units=round(writes, 3),
        log_bytes=round(log_bytes, 1),
    )


def _nearest_level(level: str, measured: Mapping[str, float]) -> str:
    """The measured level that logs what `level` would (WARN covers ERROR: fewer bytes still)."""
    wanted = LOG_LEVELS.get(level, 20)
    candidates = sorted(measured, key=lambda m: LOG_LEVELS[m])
    below = [m for m in candidates if LOG_LEVELS[m] <= wanted]
    return below[-1] if below else candidates[0]


def load_prices(path: Path = PRICES_FILE) -> dict[str, Any]:
    prices: dict[str, Any] = json.loads(path.read_text())
    return prices


def run(calls: int, rate: float, progress: bool = True) -> dict[str, Any]:
    prices = load_prices()

    def note(text: str) -> None:
        if progress:
            print(text, file=sys.stderr, flush=True)

    note(f"synthesizing {', '.join(VARIANTS)} (bundle=false)…")
    deployments = {
        name: deployment_from_template(
            context["env"],
            synthesize(context["env"], **{k: v for k, v in context.items() if k != "env"}),
        )
        for name, context in VARIANTS.items()
    }
    note(f"measuring {calls} warm calls per operation through the gateway and group handlers…")
    measured = measure(calls, levels=("DEBUG", "INFO", "WARN"))
    figures: dict[str, Any] = {
        "prices": {"date": prices["date"], "region": prices["region"]},
        "calls_per_second": rate,
        "mix": dict(MIX),
        "measured": [asdict(m) for m in measured],
        "warm_overhead_ratio": {m.operation: m.overhead_ratio for m in measured},
        "load": os.getloadavg()[0],
    }
    for env, deployment in deployments.items():
        call = profile(measured, deployment, prices)
        figures[env] = {
            "deployment": asdict(deployment),
            "call": asdict(call),
            "per_million_calls": cost_per_million(call, deployment, prices, calls_per_second=rate),
            # The same bill for a million calls of one operation (memory_get: the issue's row).
            "per_million_by_operation": {
                m.operation: cost_per_million(
                    profile(measured, deployment, prices, mix={m.operation: 1.0}),
                    deployment,
                    prices,
                    calls_per_second=rate,
                )["total"]
                for m in measured
            },
            "idle_per_month": idle_per_month(deployment, prices),
        }
        at_rates = {
            f"{r:g}": cost_per_million(call, deployment, prices, calls_per_second=r) for r in RATES
        }
        figures[env]["per_million_calls_at_rate"] = at_rates
        quiet, busy = (at_rates[f"{r:g}"] for r in RATES)
        note(
            f"{env}: ${quiet['total']:.2f} per 1M calls at {RATES[0]:g} call/s "
            f"(X-Ray ${quiet['xray']:.2f}), ${busy['total']:.2f} at {RATES[1]:g} calls/s "
            f"(X-Ray ${busy['xray']:.2f}); ${figures[env]['idle_per_month']['total']:.2f} idle "
            "per month"
        )
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: `cairn bench cost [--calls 60] [--rate 10]`."""
    parser = argparse.ArgumentParser(prog="cairn bench cost", description=__doc__)
    parser.add_argument("--calls", type=int, default=60, help="timed calls per operation")
    parser.add_argument(
        "--rate",
        type=float,
        default=10.0,
        help="steady tool calls per second the X-Ray share is taken at (default 10)",
    )
    args = parser.parse_args(argv)
    if args.calls < 3 or args.rate <= 0:
        parser.error("--calls must be at least 3 and --rate positive")
    print(json.dumps(run(args.calls, args.rate)))
    return 0

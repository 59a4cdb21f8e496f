"""Deployment configuration read once from CDK context (`-c key=value` or cdk.json).

Every construct receives a `DeployConfig`; nothing below the app reads context or the
environment itself.

| context key      | default      | meaning                                                 |
|------------------|--------------|---------------------------------------------------------|
| env              | dev          | dev, staging (the pipeline's rehearsal) or prod         |
| developer        | $USER        | dev only: stack name suffix (cairn-dev-<developer>)     |
| bundle           | true         | false: skip dependency bundling (tests; not deployable) |
| domain_name      | -            | custom domain of the API (needs certificate_arn)        |
| certificate_arn  | -            | ACM certificate (stack's region) for domain_name        |
| hosted_zone_id   | -            | Route 53 zone for the alias record (with the zone name) |
| hosted_zone_name | -            | the zone's domain name                                  |
| waf              | true in staging, prod | a WAF web ACL (CloudFront's, or the REST stage's) |
| waf_acl_arn      | -            | associate this existing web ACL instead                 |
| api              | see meaning  | http (HTTP API, $1/M; no WAF's default), rest (REST     |
|                  |              | API, $3.50/M; a WAF's default outside us-east-1 without |
|                  |              | waf_acl_arn), cloudfront (HTTP API behind CloudFront +  |
|                  |              | WAF, $2/M) or function_url (the gateway's function URL  |
|                  |              | behind CloudFront + WAF, $1/M; a WAF's default in       |
|                  |              | us-east-1 or with a CLOUDFRONT-scope waf_acl_arn)       |
| throttle_rate    | 50           | stage-wide steady requests per second (coarse guard)    |
| throttle_burst   | 100          | stage-wide burst                                        |
| allowed_origins  | -            | comma-separated browser origins the gateway accepts     |
| alarm_email      | -            | e-mail address subscribed to the alarm topic            |
| oauth            | false        | add the OAuth authorization server (Cognito, infra/oauth) |
| oauth_callback_urls | -         | comma-separated redirect URIs of the MCP clients (oauth)  |
| curator_model    | -            | Bedrock model id the curator asks about contradictions  |
| search           | see meaning  | domain (one small OpenSearch node; dev's default) or    |
|                  |              | serverless (a vector collection; staging and prod)      |
| reranker         | -            | bedrock:<model id>: rerank search results with it       |
| tracing          | active       | active (X-Ray: Lambda samples the first request a second |
|                  |              | and 5 % more where a function starts a trace; behind a  |
|                  |              | REST stage the stack's 5 % rule) or pass_through (only  |
|                  |              | requests arriving sampled; docs/infra/observability.md) |
"""

from __future__ import annotations

import getpass
import re
from collections.abc import Callable
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_logs as logs

from shared.config import names

_DEVELOPER_MAX = 16
# A redirect to the user's own machine may be plain http (RFC 8252 §7.3).
_LOOPBACK_CALLBACK = re.compile(r"^http://(localhost|127\.0\.0\.1)[:/]")


class ConfigError(ValueError):
    """A context value is missing or malformed; the message names the key and the fix."""


@dataclass(frozen=True)
class DeployConfig:
    """What differs between environments and deployments, validated at synth time."""

    environment: str
    developer: str | None = None
    bundle: bool = True
    domain_name: str | None = None
    certificate_arn: str | None = None
    hosted_zone_id: str | None = None
    hosted_zone_name: str | None = None
    waf: bool = False
    waf_acl_arn: str | None = None
    throttle_rate: int = 50
    throttle_burst: int = 100
    allowed_origins: tuple[str, ...] = ()
    alarm_email: str | None = None
    oauth: bool = False
    oauth_callback_urls: tuple[str, ...] = ()
    # "http" (HTTP API), "rest" (REST API, the only one a regional WAF attaches to) or
    # "cloudfront" (an HTTP API reachable only through CloudFront, the WAF at the edge) or
    # "function_url" (the gateway's function URL as CloudFront's origin, no API Gateway).
    api: str = "http"
    # A Bedrock model (Converse) judging memory contradictions in the curator; None: rules.
    curator_model: str | None = None
    # Where search runs: "domain" (a one-node managed OpenSearch domain, the cheap dev choice)
    # or "serverless" (a vector collection: no operations, scales, 1-2 OCUs minimum).
    search: str = "serverless"
    # `bedrock:<model id>`: the functions that search rerank with that model (CAIRN_RERANKER)
    # and may invoke exactly it; None: no reranking.
    reranker: str | None = None
    # X-Ray: "active" or "pass_through" (lambda_.Tracing), see TRACING_CHOICES.
    tracing: str = "active"
    # The stack's region when the CLI knows it (CDK_DEFAULT_REGION); None: environment-agnostic.
    region: str | None = None

    @property
    def is_prod(self) -> bool:
        return self.environment == "prod"

    @property
    def stack_name(self) -> str:
        """cairn-prod, or cairn-dev-<developer> so developers never share a dev stack."""
        return names.stack_name(self.environment, self.developer)

    @property
    def resource_prefix(self) -> str:
        """Prefix of the few resources that need an explicit name (<= 27 characters)."""
        return self.stack_name

    @property
    def removal_policy(self) -> cdk.RemovalPolicy:
        """Stateful resources survive a stack deletion in prod; dev cleans up after itself."""
        return cdk.RemovalPolicy.RETAIN if self.is_prod else cdk.RemovalPolicy.DESTROY

    @property
    def log_retention(self) -> logs.RetentionDays:
        return logs.RetentionDays.SIX_MONTHS if self.is_prod else logs.RetentionDays.TWO_WEEKS

    @classmethod
    def from_context(
        cls, get: Callable[[str], object], *, region: str | None = None
    ) -> DeployConfig:
        """Build from a context lookup such as `app.node.try_get_context`; `region` is the
        stack's (None: not known at synth), which decides the front a WAF gets by default."""
        environment = _text(get("env")) or "dev"
        if environment not in names.DEPLOY_ENVIRONMENTS:
            raise ConfigError(
                f"context `env` must be one of {', '.join(names.DEPLOY_ENVIRONMENTS)} "
                f"(got {environment!r}): pass -c env=dev or -c env=prod"
            )
        developer = None
        if environment == "dev":
            developer = _developer(_text(get("developer")) or _login_name())
        domain_name = _text(get("domain_name"))
        certificate_arn = _text(get("certificate_arn"))
        if bool(domain_name) != bool(certificate_arn):
            raise ConfigError(
                "context `domain_name` and `certificate_arn` go together: pass both "
                "(an ACM certificate in the stack's region) or neither"
            )
        waf_acl_arn = _text(get("waf_acl_arn"))
        waf_flag = get("waf")
        raw_api = _text(get("api"))
        # A CloudFront front always carries a WAF (that is what it is for). Staging is prod's
        # rehearsal: the same front, so its smoke test goes through CloudFront, the WAF and
        # the origin header as prod's callers will.
        waf_default = environment in ("staging", "prod") or (raw_api or "").lower() in EDGE_APIS
        waf = _flag(waf_flag, "waf") if waf_flag is not None else waf_default
        origins = tuple(o.strip() for o in (_text(get("allowed_origins")) or "").split(","))
        oauth = _flag(get("oauth"), "oauth")
        callbacks = _callback_urls(_text(get("oauth_callback_urls")), oauth)
        api = _api(
            raw_api,
            waf=(waf and not waf_acl_arn) or bool(waf_acl_arn),
            acl=waf_acl_arn,
            domain=bool(domain_name),
            edge_acl_here=region in (None, EDGE_REGION),
        )
        _check_edge(api, waf_acl_arn, certificate_arn)
        _check_regional_certificate(api, certificate_arn, region)
        return cls(
            environment=environment,
            developer=developer,
            bundle=_flag(get("bundle"), "bundle", default=True),
            domain_name=domain_name,
            certificate_arn=certificate_arn,
            hosted_zone_id=_text(get("hosted_zone_id")),
            hosted_zone_name=_text(get("hosted_zone_name")),
            waf=waf and not waf_acl_arn,
            waf_acl_arn=waf_acl_arn,
            throttle_rate=_positive(get("throttle_rate"), "throttle_rate", 50),
            throttle_burst=_positive(get("throttle_burst"), "throttle_burst", 100),
            allowed_origins=tuple(o for o in origins if o),
            alarm_email=_text(get("alarm_email")),
            oauth=oauth,
            oauth_callback_urls=callbacks,
            curator_model=_text(get("curator_model")),
            search=_search(_text(get("search")), environment),
            reranker=_reranker(_text(get("reranker"))),
            api=api,
            tracing=_tracing(_text(get("tracing"))),
            region=region,
        )


def _text(value: object) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _flag(value: object, key: str, default: bool = False) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ConfigError(f"context `{key}` must be true or false (got {value!r})")


def _positive(value: object, key: str, default: int) -> int:
    if value is None:
        return default
    try:
        number = int(str(value))
    except ValueError:
        number = 0
    if number < 1:
        raise ConfigError(f"context `{key}` must be a positive integer (got {value!r})")
    return number


def _callback_urls(raw: str | None, oauth: bool) -> tuple[str, ...]:
    urls = tuple(u.strip() for u in (raw or "").split(",") if u.strip())
    if oauth and not urls:
        raise ConfigError(
            "context `oauth=true` needs `oauth_callback_urls`: the comma-separated redirect URIs "
            "of the MCP clients that will sign in (e.g. https://claude.ai/api/mcp/auth_callback)"
        )
    for url in urls:
        if not (
            url.startswith("https://") or re.match(r"^http://(localhost|127\.0\.0\.1)[:/]", url)
        ):
            raise ConfigError(
                f"context `oauth_callback_urls`: {url!r} must be https:// (or http://localhost "
                "for a client on the user's machine)"
            )
    return urls


SEARCH_CHOICES = ("domain", "serverless")


def _search(value: str | None, environment: str) -> str:
    """`domain` by default in dev (a small node costs a fraction of the minimum OCUs),
    `serverless` in staging and prod."""
    choice = value or ("domain" if environment == "dev" else "serverless")
    if choice not in SEARCH_CHOICES:
        raise ConfigError(
            f"context `search` must be one of {', '.join(SEARCH_CHOICES)} (got {value!r})"
        )
    return choice


def _reranker(value: str | None) -> str | None:
    """`bedrock:<model id>` or nothing: in AWS only Bedrock's rerank models run (the local
    cross-encoder's weights are not in the function bundle)."""
    if value is None or value == "none":
        return None
    model = value.removeprefix("bedrock:")
    if not value.startswith("bedrock:") or not re.fullmatch(r"[a-z0-9][a-z0-9.:-]*", model):
        raise ConfigError(
            f"context `reranker` must be bedrock:<model id>, e.g. bedrock:amazon.rerank-v1:0 "
            f"(got {value!r})"
        )
    return value


# How the functions trace (docs/infra/observability.md, "What tracing costs"): `active` lets Lambda
# sample where a function starts a trace, at its fixed 1 request a second plus 5 % (no custom
# rule applies there), which at 1 call/s traces nearly every call ($5 per million);
# `pass_through` traces only requests that arrive sampled (a REST stage's 5 % rule, or a caller's
# `X-Amzn-Trace-Id: ...;Sampled=1`).
TRACING_CHOICES = ("active", "pass_through")


def _tracing(value: str | None) -> str:
    choice = (value or "active").lower()
    if choice not in TRACING_CHOICES:
        raise ConfigError(f"context `tracing` must be active or pass_through (got {value!r})")
    return choice


API_CHOICES = ("http", "rest", "cloudfront", "function_url")
# The fronts that put CloudFront (and its WAF) before the gateway.
EDGE_APIS = ("cloudfront", "function_url")
# What a WAF picks when `api` is not given (docs/infra/api-and-auth.md, "The API bill"): CloudFront
# straight to the gateway's function URL, $1.00 per million requests (CloudFront's; a function URL
# adds nothing) against $2.00 with an HTTP API behind CloudFront and REST's $3.50.
API_WITH_WAF = "function_url"
# CLOUDFRONT-scope web ACLs exist only in us-east-1 (and CloudFront's certificates too).
EDGE_REGION = "us-east-1"


def _api(
    raw: str | None,
    *,
    waf: bool,
    acl: str | None = None,
    domain: bool = False,
    edge_acl_here: bool = True,
) -> str:
    """An HTTP API costs $1.00 per million requests, a REST API $3.50; a WAF attaches to a REST
    stage directly, or to a CloudFront distribution ($1.00) in front of the gateway's function
    URL (nothing more) or of an HTTP API ($1.00 more). Without `api`, a WAF picks
    `API_WITH_WAF`, and an existing web ACL what its scope attaches to (a REGIONAL one a REST
    stage, a CLOUDFRONT one a distribution).

    The function URL front needs a custom domain: the gateway is told its public URL at
    deploy, and the distribution's own name would depend on the gateway it fronts (function
    -> distribution -> function URL -> function, a cycle CloudFormation refuses). Without a
    domain the CloudFront default is the HTTP API behind it."""
    edge = API_WITH_WAF if domain else "cloudfront"
    if raw is None:
        if acl:
            return edge if ":global/webacl/" in acl else "rest"
        if not waf:
            return "http"
        # A CLOUDFRONT-scope web ACL can be created in us-east-1 only: elsewhere, without one
        # passed in, the WAF sits on a REST stage (regional), so prod deploys in any region.
        return edge if edge_acl_here else "rest"
    api = raw.lower()
    if api not in API_CHOICES:
        raise ConfigError(
            f"context `api` must be http, rest, cloudfront or function_url (got {raw!r})"
        )
    if api == "http" and waf:
        raise ConfigError(
            "context `api=http` cannot carry a WAF (AWS WAF attaches to REST API stages and "
            "CloudFront, not HTTP APIs): pass -c api=function_url, -c api=cloudfront or "
            "-c api=rest, or -c waf=false without waf_acl_arn"
        )
    if api in EDGE_APIS and not waf:
        raise ConfigError(
            f"context `api={api}` puts a WAF at the edge and cannot go without one: drop "
            "-c waf=false (or pass -c api=http for no WAF at all)"
        )
    if api == "function_url" and not domain:
        raise ConfigError(
            "context `api=function_url` needs domain_name and certificate_arn: the gateway "
            "learns its public URL at deploy, and without a domain that is the distribution's "
            "own name, which depends on the gateway it fronts (a cycle); pass both, or "
            "-c api=cloudfront"
        )
    return api


def _check_edge(api: str, waf_acl_arn: str | None, certificate_arn: str | None) -> None:
    """A web ACL's scope must match what it attaches to, and CloudFront takes its certificate
    from us-east-1 only."""
    if waf_acl_arn and api in EDGE_APIS and ":global/webacl/" not in waf_acl_arn:
        raise ConfigError(
            f"context `waf_acl_arn` with `api={api}` must be a CLOUDFRONT-scope web ACL "
            "(arn:aws:wafv2:us-east-1:<account>:global/webacl/...), not a regional one"
        )
    if waf_acl_arn and api == "rest" and ":global/webacl/" in waf_acl_arn:
        raise ConfigError(
            "context `waf_acl_arn` is a CLOUDFRONT-scope web ACL, which cannot attach to a REST "
            "stage: pass a REGIONAL one, or -c api=function_url"
        )
    if api in EDGE_APIS and certificate_arn and ":acm:us-east-1:" not in certificate_arn:
        raise ConfigError(
            f"context `certificate_arn` with `api={api}` must be an ACM certificate in "
            "us-east-1 (CloudFront reads certificates from there only)"
        )


def _check_regional_certificate(api: str, certificate_arn: str | None, region: str | None) -> None:
    """An API Gateway custom domain (http, rest) serves a certificate of the stack's region."""
    if api in EDGE_APIS or not certificate_arn or region is None:
        return
    if f":acm:{region}:" not in certificate_arn:
        raise ConfigError(
            f"context `certificate_arn` with `api={api}` must be an ACM certificate in the "
            f"stack's region, {region} (API Gateway's regional domains read it there); for "
            f"CloudFront's us-east-1 certificate pass -c waf_acl_arn=<a CLOUDFRONT-scope ACL "
            "made in us-east-1> (docs/infra/api-and-auth.md)"
        )


def _login_name() -> str:
    try:
        return getpass.getuser()  # $LOGNAME, $USER, ... then the password database
    except (KeyError, OSError):
        return ""


def _developer(raw: str) -> str:
    """Lower-case letters, digits and dashes, short enough for every derived resource name."""
    cleaned = re.sub(r"[^a-z0-9]+", "-", raw.lower()).strip("-")[:_DEVELOPER_MAX].strip("-")
    if not cleaned:
        raise ConfigError(
            "a dev stack needs a developer name: pass -c developer=<you> or set $USER"
        )
    if not cleaned[0].isalpha():
        cleaned = f"d{cleaned}"[:_DEVELOPER_MAX]
    return cleaned

"""Before the first real deploy: checks run against a deployed stack (a sandbox account's),
for what synth and the tests cannot prove (docs/infra/first-deploy.md).

    uv run python scripts/first_deploy_checks.py --stack cairn-staging [--access-token <jwt>]

Each check prints PASS, FAIL or SKIP with what it saw; the exit status is 1 if any failed.

- **index template**: the search index template's custom resource (OpenSearch Serverless or
  domain permissions of its provider) reached CREATE_COMPLETE or UPDATE_COMPLETE;
- **oauth audience**: with `oauth=true`, an access token the pool issued (pass one from a
  sign-in) carries the issuer the gateway trusts and an `aud` naming the MCP URL, as the
  gateway's OAuth check requires; Cognito puts `client_id` in access tokens, so this fails
  until the pool adds the audience;
- **alarm delivery**: the alarm topic has at least one confirmed subscription (an e-mail
  subscription stays pending until its link is followed, and delivers nothing until then);
- **canary**: the gateway's CodeDeploy group exists, and its last deployment (the canary in
  staging and prod) succeeded.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from shared.config import names

PASS: Final = "PASS"
FAIL: Final = "FAIL"
SKIP: Final = "SKIP"
INDEX_TEMPLATE_TYPE: Final = "Custom::SearchIndexTemplate"
DEPLOYMENT_GROUP_TYPE: Final = "AWS::CodeDeploy::DeploymentGroup"
COMPLETE: Final = ("CREATE_COMPLETE", "UPDATE_COMPLETE")


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str

    def line(self) -> str:
        return f"{self.status} {self.name}: {self.detail}"


def stack_outputs(cloudformation: Any, stack: str) -> dict[str, str]:
    described = cloudformation.describe_stacks(StackName=stack)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])}


def _resources_of_type(cloudformation: Any, stack: str, cfn_type: str) -> list[dict[str, Any]]:
    resources = cloudformation.describe_stack_resources(StackName=stack)["StackResources"]
    return [r for r in resources if r["ResourceType"] == cfn_type]


def check_index_template(cloudformation: Any, stack: str) -> Check:
    name = "index template"
    found = _resources_of_type(cloudformation, stack, INDEX_TEMPLATE_TYPE)
    if not found:
        return Check(name, FAIL, f"no {INDEX_TEMPLATE_TYPE} in {stack}")
    statuses = {r["ResourceStatus"] for r in found}
    if statuses <= set(COMPLETE):
        return Check(name, PASS, f"the custom resource is {', '.join(sorted(statuses))}")
    reasons = "; ".join(
        r.get("ResourceStatusReason", "") for r in found if r.get("ResourceStatusReason")
    )
    return Check(name, FAIL, f"{', '.join(sorted(statuses))}: {reasons or 'no reason given'}")


def token_claims(token: str) -> dict[str, Any]:
    """The claims of a JWT, unverified (the gateway verifies; this only reads what the pool
    put in). Raises ValueError on something that is not a JWT."""
    parts = token.split(".")
    if len(parts) != 3:
        raise ValueError("an access token is three base64url parts separated by dots")
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload))
    except (binascii.Error, ValueError) as error:
        raise ValueError(f"the token's payload is not base64url JSON: {error}") from None
    if not isinstance(claims, dict):
        raise ValueError("the token's payload is not a JSON object")
    return claims


def check_oauth_audience(outputs: Mapping[str, str], access_token: str | None) -> Check:
    name = "oauth audience"
    issuer = outputs.get(names.Outputs.OAUTH_ISSUER)
    if issuer is None:
        return Check(name, SKIP, "the stack has no OAuth authorization server (oauth=false)")
    if not access_token:
        return Check(name, SKIP, "pass --access-token <a token from signing in through the pool>")
    try:
        claims = token_claims(access_token)
    except ValueError as error:
        return Check(name, FAIL, str(error))
    audience = outputs[names.Outputs.MCP_URL]
    problems = []
    if claims.get("iss") != issuer:
        problems.append(f"iss is {claims.get('iss')!r}, not the stack's issuer {issuer!r}")
    aud = claims.get("aud")
    audiences = aud if isinstance(aud, list) else [aud] if aud else []
    if not any(a == audience or str(a).startswith(f"{audience}/") for a in audiences):
        problems.append(
            f"aud is {aud!r}, which does not name {audience!r} (the gateway refuses the token; "
            f"Cognito's access tokens carry client_id={claims.get('client_id')!r} instead)"
        )
    if problems:
        return Check(name, FAIL, "; ".join(problems))
    return Check(name, PASS, f"iss and aud name this stack ({audience})")


def check_alarm_delivery(sns: Any, outputs: Mapping[str, str]) -> Check:
    name = "alarm delivery"
    topic = outputs.get(names.Outputs.ALARM_TOPIC)
    if topic is None:
        return Check(name, FAIL, f"no {names.Outputs.ALARM_TOPIC} output")
    subscriptions = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
    confirmed = [
        s for s in subscriptions if s["SubscriptionArn"] not in ("PendingConfirmation", "Deleted")
    ]
    if confirmed:
        where = ", ".join(sorted({s["Protocol"] for s in confirmed}))
        return Check(name, PASS, f"{len(confirmed)} confirmed subscription(s) ({where})")
    if subscriptions:
        return Check(
            name, FAIL, f"{len(subscriptions)} subscription(s), none confirmed: follow the link"
        )
    return Check(name, FAIL, "no subscription: deploy with -c alarm_email=<address>")


def check_canary(cloudformation: Any, codedeploy: Any, stack: str) -> Check:
    name = "canary"
    groups = _resources_of_type(cloudformation, stack, DEPLOYMENT_GROUP_TYPE)
    if not groups:
        return Check(name, FAIL, f"no {DEPLOYMENT_GROUP_TYPE} in {stack}")
    applications = _resources_of_type(cloudformation, stack, "AWS::CodeDeploy::Application")
    if not applications:
        return Check(name, FAIL, "no CodeDeploy application in the stack")
    info = codedeploy.get_deployment_group(
        applicationName=applications[0]["PhysicalResourceId"],
        deploymentGroupName=groups[0]["PhysicalResourceId"],
    )["deploymentGroupInfo"]
    config = info.get("deploymentConfigName", "?")
    last = info.get("lastAttemptedDeployment")
    if not last:
        return Check(
            name, SKIP, f"{config}: no deployment yet (the next change to the gateway runs one)"
        )
    if last.get("status") == "Succeeded":
        return Check(name, PASS, f"{config}: last deployment {last.get('deploymentId')} succeeded")
    return Check(
        name, FAIL, f"{config}: last deployment {last.get('deploymentId')} is {last.get('status')}"
    )


def run_checks(session: Any, stack: str, access_token: str | None = None) -> list[Check]:
    cloudformation = session.client("cloudformation")
    outputs = stack_outputs(cloudformation, stack)
    return [
        check_index_template(cloudformation, stack),
        check_oauth_audience(outputs, access_token),
        check_alarm_delivery(session.client("sns"), outputs),
        check_canary(cloudformation, session.client("codedeploy"), stack),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", required=True, help="the deployed stack, e.g. cairn-staging")
    parser.add_argument("--region", default=None, help="its region (default: your AWS config)")
    parser.add_argument("--access-token", default=None, help="an OAuth access token to inspect")
    args = parser.parse_args(argv)
    import boto3

    session = boto3.session.Session(region_name=args.region)
    checks = run_checks(session, args.stack, args.access_token)
    for check in checks:
        print(check.line())
    failed = [c for c in checks if c.status == FAIL]
    print(f"{len(checks) - len(failed)} of {len(checks)} passed or skipped, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

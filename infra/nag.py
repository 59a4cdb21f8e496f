"""cdk-nag suppressions: each names its rule, its reason and the narrowest `appliesTo`."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Aspects, CfnResource, Stack
from cdk_nag import AwsSolutionsChecks, NagPackSuppression, NagSuppressions
from constructs import IConstruct

# X-Ray's PutTraceSegments/PutTelemetryRecords have no resource-level permissions.
XRAY_REASON = "X-Ray trace upload actions support only Resource '*' (no resource-level IAM)."
XRAY_WILDCARD = "Resource::*"


def add_checks(scope: IConstruct) -> None:
    """Run cdk-nag's AWS Solutions pack over `scope` on every synth (the app, or a test stack)."""
    Aspects.of(scope).add(AwsSolutionsChecks(verbose=True))


def suppress(
    construct: IConstruct,
    rule: str,
    reason: str,
    applies_to: Sequence[str] | None = None,
    *,
    children: bool = True,
) -> None:
    """Suppress `rule` on `construct` (and its children unless `children=False`), optionally
    only for the findings listed in `applies_to`."""
    NagSuppressions.add_resource_suppressions(
        construct,
        [
            NagPackSuppression(
                id=f"AwsSolutions-{rule}",
                reason=reason,
                applies_to=list(applies_to) if applies_to else None,
            )
        ],
        apply_to_children=children,
    )


def arn_token(resource: IConstruct, suffix: str = "") -> str:
    """How cdk-nag spells `<LogicalId.Arn>` + suffix of a resource in an `appliesTo` entry."""
    cfn = resource if isinstance(resource, CfnResource) else resource.node.default_child
    assert isinstance(cfn, CfnResource), f"{resource.node.path} has no CloudFormation resource"
    return f"Resource::<{Stack.of(cfn).get_logical_id(cfn)}.Arn>{suffix}"


def nag_resource(stack: Stack, arn: str) -> str:
    """How cdk-nag names `arn` in an IAM5 finding: `Resource::` + the ARN with each `Ref` as
    `<Name>`. A synth with a concrete account or region (the CDK CLI's environment, so every
    deploy) resolves some of them to literals, so the name is computed, never written out."""
    resolved = stack.resolve(arn)
    if isinstance(resolved, str):
        return f"Resource::{resolved}"
    parts = resolved["Fn::Join"][1]
    return "Resource::" + "".join(
        part if isinstance(part, str) else f"<{part['Ref']}>" for part in parts
    )

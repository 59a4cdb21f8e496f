"""The CDK app: `npx cdk synth -c env=dev|prod [-c developer=<you>]` (see docs/infra/README.md).

cdk-nag's AWS Solutions checks run on every synth; any unsuppressed finding fails the tests.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import aws_cdk as cdk

from infra.config import DeployConfig
from infra.nag import add_checks
from infra.stack import CairnStack
from shared.config import names


def build_app(
    context: Mapping[str, object] | None = None,
    outdir: str | None = None,
    region: str | None = None,
) -> tuple[cdk.App, CairnStack]:
    """The app with its one stack; `context` adds to (and overrides) cdk.json and `-c`;
    `region` (else the CLI's CDK_DEFAULT_REGION) pins the stack's region."""
    app = cdk.App(context=dict(context or {}), outdir=outdir)
    region = region or os.environ.get("CDK_DEFAULT_REGION")
    config = DeployConfig.from_context(app.node.try_get_context, region=region)
    stack = CairnStack(
        app,
        config.stack_name,
        config=config,
        stack_name=config.stack_name,
        description=f"{names.SERVICE} MCP server ({config.stack_name})",
        env=cdk.Environment(
            account=os.environ.get("CDK_DEFAULT_ACCOUNT"),
            region=region,
        ),
    )
    add_checks(app)
    return app, stack


def main() -> None:
    app, _ = build_app()
    app.synth()


if __name__ == "__main__":
    main()

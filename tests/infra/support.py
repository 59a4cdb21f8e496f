"""Synthesis and template helpers shared by the infra tests."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import App, CfnElement, Stack, Stage
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template
from aws_cdk.cx_api import SynthesisMessageLevel
from constructs import IConstruct

from infra.app import build_app
from infra.config import DeployConfig
from infra.nag import add_checks
from infra.stack import CairnStack
from infra.workflows import Workflows

ROOT = Path(__file__).resolve().parents[2]
PROD_EXTRAS = {
    "domain_name": "mcp.example.com",
    "certificate_arn": "arn:aws:acm:us-east-1:111111111111:certificate/example",
    "hosted_zone_id": "Z0000000000EXAMPLE",
    "hosted_zone_name": "example.com",
    "alarm_email": "oncall@example.com",
    # The optional OAuth authorization server is synthesized (and nag-checked) in prod.
    "oauth": "true",
    "oauth_callback_urls": "https://claude.ai/api/mcp/auth_callback",
}

# What `Annotations.find_error("*", Match.string_like_regexp(...))` matched: an AwsSolutions rule.
_NAG_RULE = re.compile("AwsSolutions-.*", re.MULTILINE)

# Log retention by environment: what infra.config.DeployConfig.log_retention sets.
RETENTION_DAYS = {"dev": 14, "prod": 180}


@dataclass
class Synth:
    stack: CairnStack
    template: Template
    outdir: Path

    @functools.cached_property
    def document(self) -> dict[str, Any]:
        """The template as JSON, read once: `Template.to_json` crosses the jsii bridge and
        costs about a second on this stack, and tests ask for it hundreds of times."""
        document: dict[str, Any] = self.template.to_json()
        return document

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        resources: dict[str, dict[str, Any]] = self.document["Resources"]
        return resources

    def of_type(self, cfn_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.resources.items() if v["Type"] == cfn_type}

    def logical_id(self, construct: IConstruct) -> str:
        """Logical id of an L2 construct's (or an L1's own) CloudFormation resource."""
        cfn = construct if isinstance(construct, CfnElement) else construct.node.default_child
        assert isinstance(cfn, CfnElement)
        return self.stack.resolve(cfn.logical_id)  # type: ignore[no-any-return]

    def functions(self) -> dict[str, str]:
        """Function name (gateway, memory, ...) -> logical id, from each handler path."""
        return dict(self._functions)

    @functools.cached_property
    def _functions(self) -> dict[str, str]:
        # Once per synth: finding the template provider crosses the jsii bridge, and tests ask
        # for the functions (role_of, statements_of, ...) hundreds of times.
        provider = self.template_provider()
        found: dict[str, str] = {}
        for logical_id, resource in self.of_type("AWS::Lambda::Function").items():
            handler = resource["Properties"]["Handler"]
            if logical_id == provider:
                continue  # the search index template's custom resource: no cairn code
            assert handler.startswith("functions.")
            assert handler.endswith(".handler.handler")
            found[handler.split(".")[1]] = logical_id
        return found

    def template_provider(self) -> str | None:
        """Logical id of the search index template provider function, if the stack has one."""
        search = self.stack.search
        provider = search.node.try_find_child("TemplateProvider")
        return self.logical_id(provider) if provider is not None else None

    def role_of(self, function: str) -> str:
        """Logical id of a function's execution role."""
        props = self.resources[self.functions()[function]]["Properties"]
        role_id: str = props["Role"]["Fn::GetAtt"][0]
        return role_id

    def statements_of(self, function: str) -> list[dict[str, Any]]:
        """Every IAM statement attached to a function's role (inline and separate policies)."""
        role_id = self.role_of(function)
        role = self.resources[role_id]["Properties"]
        assert not role.get("ManagedPolicyArns"), "function roles carry no managed policies"
        statements: list[dict[str, Any]] = []
        for policy in role.get("Policies", []):
            statements += policy["PolicyDocument"]["Statement"]
        for policy in self.of_type("AWS::IAM::Policy").values():
            if {"Ref": role_id} in policy["Properties"]["Roles"]:
                statements += policy["Properties"]["PolicyDocument"]["Statement"]
        return statements

    def actions_on(self, function: str, logical_id: str) -> set[str]:
        """Actions a function's role has on resource `logical_id` (its Arn or Ref)."""
        actions: set[str] = set()
        for statement in self.statements_of(function):
            if logical_id in json.dumps(statement["Resource"]):
                actions |= set(_list(statement["Action"]))
        return actions


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def synthesize(outdir: Path, region: str | None = None, **context: object) -> Synth:
    """The app as `cdk synth` builds it: cdk.json's context (feature flags) plus `context`,
    in `region` (None: environment-agnostic)."""
    base = json.loads((ROOT / "cdk.json").read_text())["context"]
    app, stack = build_app(
        {**base, "bundle": "false", **context}, outdir=str(outdir), region=region
    )
    app.synth()
    return Synth(stack=stack, template=Template.from_stack(stack), outdir=outdir)


def checked_stack(stack_id: str) -> Stack:
    """An empty stack in an app of its own with the same cdk-nag checks as the real app."""
    app = App()
    add_checks(app)
    return Stack(app, stack_id)


def nag_findings(stack: Stack) -> list[str]:
    """Unsuppressed cdk-nag AwsSolutions errors and warnings of `stack`: the messages of its
    app's synthesis (the one `cdk synth` fails on), synthesizing it if it has not been yet.

    Not `Annotations.from_stack`, which forces a second full synthesis of the app (about two
    seconds on the cairn stack) to see constructs added after the first: call this once the
    stack is complete.
    """
    stage = Stage.of(stack)
    assert stage is not None, "a stack in an app"
    messages = stage.synth().get_stack_artifact(stack.artifact_id).messages
    return [
        f"{m.id}: {m.entry.data[:200]}"
        for level in (SynthesisMessageLevel.ERROR, SynthesisMessageLevel.WARNING)
        for m in messages
        if m.level == level and isinstance(m.entry.data, str) and _NAG_RULE.search(m.entry.data)
    ]


@dataclass
class WorkflowsOnly:
    """The workflows construct with one state machine, in a nag-checked stack of its own.

    The cairn stack adds no state machine yet, so this is where `add_state_machine` (and its
    nag suppressions) are synthesized and checked.
    """

    stack: Stack
    workflows: Workflows
    template: Template


def workflows_only() -> WorkflowsOnly:
    stack = checked_stack("WorkflowsOnly")
    workflows = Workflows(stack, "Workflows", config=DeployConfig(environment="dev"))
    workflows.add_state_machine("Example", sfn.DefinitionBody.from_chainable(sfn.Pass(stack, "P")))
    return WorkflowsOnly(stack=stack, workflows=workflows, template=Template.from_stack(stack))

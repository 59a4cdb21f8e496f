"""Synthesizes the CDK app once per session per environment (no bundling, no AWS calls)."""

from __future__ import annotations

import pytest

from tests.infra.support import PROD_EXTRAS, Synth, WorkflowsOnly, synthesize, workflows_only


@pytest.fixture(scope="session")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(tmp_path_factory.mktemp("cdk-dev"), env="dev", developer="tester")


@pytest.fixture(scope="session")
def prod(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(tmp_path_factory.mktemp("cdk-prod"), env="prod", **PROD_EXTRAS)


@pytest.fixture(params=["dev", "prod"])
def synth(request: pytest.FixtureRequest) -> Synth:
    """Each environment in turn, for properties both must have."""
    result: Synth = request.getfixturevalue(request.param)
    return result


@pytest.fixture(scope="session")
def workflows_stack() -> WorkflowsOnly:
    """A state machine built by `Workflows.add_state_machine`, nag-checked (see support)."""
    return workflows_only()

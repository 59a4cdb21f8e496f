"""Synthesizes the CDK app once per session per environment (no bundling, no AWS calls)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.infra.support import PROD_EXTRAS, Synth, WorkflowsOnly, synthesize, workflows_only

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The infra tests run on one worker (`--dist loadgroup`): the synthesized apps are built
    once per session, and a second worker would synthesize them again."""
    for item in items:
        if item.path.is_relative_to(_HERE):
            item.add_marker(pytest.mark.xdist_group("infra"))


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

"""Validating a definition, ordering its steps, and resolving the references in step inputs.

Reference syntax (docs/workflows.md): inside any string of a step's `inputs`,
- `${inputs.<key>}`: a start input of the execution;
- `${steps.<name>.<field>}`: a field of an earlier step's output, one of `output` (the task's
  output_summary), `artifact` (its output_artifact_id), `task_id`, `agent`, `status`, `error`.
A string that is exactly one reference takes the referenced value as is (any JSON); a reference
inside a longer string is replaced by its text. A missing value resolves to null (or "").
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import ValidationError

from shared.tools.errors import InvalidArgument
from shared.workflows.models import StepOutput, WorkflowDefinition

REFERENCE = re.compile(r"\$\{([^}]*)\}")
STEP_FIELDS = frozenset({"output", "artifact", "task_id", "agent", "status", "error"})


def parse_definition(raw: Mapping[str, Any]) -> WorkflowDefinition:
    """The definition in `raw`, or `InvalidArgument` naming the step and the problem.

    >>> parse_definition({"steps": [{"name": "a"}, {"name": "b", "depends_on": ["a"]}]})
    WorkflowDefinition(...)  # doctest: +SKIP
    """
    try:
        definition = WorkflowDefinition.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = _where(raw, error["loc"])
        raise InvalidArgument(f"`definition`{where}: {error['msg']}", field="definition") from exc
    names: set[str] = set()
    for step in definition.steps:
        if step.name in names:
            raise _bad(step.name, "the name is used by another step; step names must be unique")
        names.add(step.name)
    for step in definition.steps:
        for dependency in step.depends_on:
            if dependency == step.name:
                raise _bad(step.name, "depends on itself")
            if dependency not in names:
                raise _bad(step.name, f"depends_on names an unknown step {dependency!r}")
    if cycle := _find_cycle(definition):
        raise _bad(cycle[0], f"is part of a dependency cycle: {' -> '.join(cycle)}")
    for step in definition.steps:
        before = ancestors(definition, step.name)
        for reference in _references(step.inputs):
            _check_reference(step.name, reference, before)
    return definition


def _where(raw: Mapping[str, Any], loc: tuple[int | str, ...]) -> str:
    """' step 2 ("fetch") field timeout_seconds' for an error inside the steps list."""
    if len(loc) >= 2 and loc[0] == "steps" and isinstance(loc[1], int):
        steps = raw.get("steps")
        name = None
        if isinstance(steps, list) and loc[1] < len(steps) and isinstance(steps[loc[1]], dict):
            name = steps[loc[1]].get("name")
        label = f" step {loc[1]}" + (f" ({name!r})" if isinstance(name, str) else "")
        rest = ".".join(str(part) for part in loc[2:])
        return label + (f" field `{rest}`" if rest else "")
    return " field `" + ".".join(str(part) for part in loc) + "`" if loc else ""


def _bad(step: str, problem: str) -> InvalidArgument:
    return InvalidArgument(f"`definition`: step {step!r} {problem}", field="definition")


def _find_cycle(definition: WorkflowDefinition) -> list[str] | None:
    """A dependency cycle as a path (first name repeated at the end), or None."""
    graph = {step.name: step.depends_on for step in definition.steps}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for dependency in graph[name]:
            if state.get(dependency) == 1:
                return [*path[path.index(dependency) :], dependency]
            if dependency not in state and (found := visit(dependency)):
                return found
        path.pop()
        state[name] = 2
        return None

    for step in definition.steps:
        if step.name not in state and (found := visit(step.name)):
            return found
    return None


def ancestors(definition: WorkflowDefinition, name: str) -> set[str]:
    """Every step `name` waits on, directly or through others."""
    graph = {step.name: step.depends_on for step in definition.steps}
    seen: set[str] = set()
    stack = list(graph[name])
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            stack.extend(graph[current])
    return seen


def levels(definition: WorkflowDefinition) -> list[list[str]]:
    """Steps grouped by depth (longest dependency path from a root), in definition order.

    Steps of one level never depend on each other: the compiled state machine runs each level
    as one Parallel state.
    """
    depth: dict[str, int] = {}

    def of(name: str) -> int:
        if name not in depth:
            step = definition.step(name)
            depth[name] = 1 + max((of(d) for d in step.depends_on), default=-1)
        return depth[name]

    grouped: dict[int, list[str]] = {}
    for step in definition.steps:
        grouped.setdefault(of(step.name), []).append(step.name)
    return [grouped[level] for level in sorted(grouped)]


def _references(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        for match in REFERENCE.finditer(value):
            yield match.group(1).strip()
    elif isinstance(value, dict):
        for item in value.values():
            yield from _references(item)
    elif isinstance(value, list):
        for item in value:
            yield from _references(item)


def _check_reference(step: str, reference: str, before: set[str]) -> None:
    parts = reference.split(".")
    if parts[0] == "inputs" and len(parts) == 2 and parts[1]:
        return
    if parts[0] == "steps" and len(parts) == 3:
        _, other, field = parts
        if other not in before:
            raise _bad(
                step,
                f"refers to ${{{reference}}}, but {other!r} is not a step it depends on "
                "(directly or through others); add it to depends_on",
            )
        if field not in STEP_FIELDS:
            raise _bad(
                step,
                f"refers to ${{{reference}}}: a step's field is one of "
                f"{', '.join(sorted(STEP_FIELDS))}",
            )
        return
    raise _bad(
        step,
        f"has an unknown reference ${{{reference}}}; use ${{inputs.<key>}} or "
        "${steps.<name>.<field>}",
    )


def resolve(value: Any, inputs: Mapping[str, Any], outputs: Mapping[str, StepOutput]) -> Any:
    """`value` with every reference replaced (see the module docstring)."""
    if isinstance(value, str):
        whole = REFERENCE.fullmatch(value)
        if whole:
            return _lookup(whole.group(1).strip(), inputs, outputs)
        return REFERENCE.sub(lambda m: _text(_lookup(m.group(1).strip(), inputs, outputs)), value)
    if isinstance(value, dict):
        return {key: resolve(item, inputs, outputs) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve(item, inputs, outputs) for item in value]
    return value


def _lookup(reference: str, inputs: Mapping[str, Any], outputs: Mapping[str, StepOutput]) -> Any:
    parts = reference.split(".")
    if parts[0] == "inputs":
        return inputs.get(parts[1])
    found = outputs.get(parts[1])
    return None if found is None else getattr(found, parts[2])


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value, separators=(",", ":"))

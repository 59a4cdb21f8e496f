"""Tool specifications: the single place a tool's name, schema, scope and behaviour are declared.

Each group module (for example `shared.memory.tools`) builds a `ToolGroup`; the gateway lists
and validates from the specs, and the group function executes the implementations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from shared.auth.principal import Principal

ServiceT = TypeVar("ServiceT")


@dataclass(frozen=True)
class Annotations:
    """MCP tool annotations, chosen per tool (never defaulted)."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool

    def to_wire(self) -> dict[str, bool]:
        return {
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        }


READ_ONLY = Annotations(read_only=True, destructive=False, idempotent=True, open_world=False)
# Each call adds a new record (or makes a one-time transition) and erases nothing: repeating
# it is not a no-op, so not idempotent.
APPEND = Annotations(read_only=False, destructive=False, idempotent=False, open_world=False)


@dataclass(frozen=True)
class ToolContext(Generic[ServiceT]):
    """What an implementation receives besides its arguments."""

    principal: Principal
    request_id: str
    service: ServiceT


Implementation = Callable[[ToolContext[Any], Any], BaseModel]


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its contract (name, models, scope) and its implementation."""

    name: str
    title: str
    description: str
    group: str
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    scopes: tuple[str, ...]
    annotations: Annotations
    implementation: Implementation


@dataclass
class ToolGroup(Generic[ServiceT]):
    """The tools of one group and the factory of the service they share."""

    name: str
    build_service: Callable[[], ServiceT]
    tools: dict[str, ToolSpec] = field(default_factory=dict)

    def tool(
        self,
        *,
        name: str,
        title: str,
        description: str,
        input_model: type[BaseModel],
        output_model: type[BaseModel],
        scopes: tuple[str, ...],
        annotations: Annotations,
    ) -> Callable[[Implementation], Implementation]:
        """Register an implementation under `name` (decorator)."""

        def register(implementation: Implementation) -> Implementation:
            if name in self.tools:
                raise ValueError(f"tool {name!r} is registered twice")
            self.tools[name] = ToolSpec(
                name=name,
                title=title,
                description=description,
                group=self.name,
                input_model=input_model,
                output_model=output_model,
                scopes=scopes,
                annotations=annotations,
                implementation=implementation,
            )
            return implementation

        return register


class Catalog:
    """Every tool of every group, in a stable order (the order of `tools/list`)."""

    def __init__(self, specs: Iterable[ToolSpec]) -> None:
        self._specs: dict[str, ToolSpec] = {}
        for spec in specs:
            if spec.name in self._specs:
                raise ValueError(f"tool {spec.name!r} is defined by two groups")
            self._specs[spec.name] = spec

    def get(self, name: str) -> ToolSpec | None:
        return self._specs.get(name)

    def visible_to(self, principal: Principal) -> list[ToolSpec]:
        return [s for s in self._specs.values() if principal.may_call(s.name, s.scopes)]

    def __iter__(self) -> Any:
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)

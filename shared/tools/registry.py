"""Tool specifications: the single place a tool's name, schema, scope and behaviour are declared.

Each group module (for example `shared.memory.tools`) builds a `ToolGroup`; the gateway lists
and validates from the specs, and the group function executes the implementations. A tool's
input and output models are read from its function's annotations, so the schema `tools/list`
shows and the types mypy checks are the same declaration.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeGuard, TypeVar, get_type_hints

from pydantic import BaseModel

from shared.auth.principal import Principal
from shared.tools.catalog import ToolEntry
from shared.tools.schemas import input_schema, output_schema

ServiceT = TypeVar("ServiceT")
InputT = TypeVar("InputT", bound=BaseModel)
OutputT = TypeVar("OutputT", bound=BaseModel)


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


# A tool function: `(ctx, args: <input model>) -> <output model>`, typed end to end.
ToolFunction = Callable[[ToolContext[ServiceT], InputT], OutputT]
# What a `ToolSpec` keeps: the catalog holds tools of every service and model, so types are erased
# here; `execute` validates the arguments against `input_model` before the call.
Implementation = Callable[[ToolContext[Any], Any], BaseModel]


def _is_model(annotation: object) -> TypeGuard[type[BaseModel]]:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def models_of(name: str, function: Callable[..., Any]) -> tuple[type[BaseModel], type[BaseModel]]:
    """The input and output models of tool `name`, read from `function`'s annotations.

    Refuses (TypeError, at import) a function that is not `(ctx, args: Model) -> Model`:

    >>> def memory_get(ctx: ToolContext[MemoryService], args: MemoryGetInput) -> MemoryOutput:
    ...     ...  # doctest: +SKIP
    >>> models_of("memory_get", memory_get)  # doctest: +SKIP
    (MemoryGetInput, MemoryOutput)
    """
    shape = "`(ctx: ToolContext[Service], args: InputModel) -> OutputModel` with pydantic models"
    where = f"tool {name!r} ({function.__module__}.{function.__qualname__})"
    parameters = list(inspect.signature(function).parameters.values())
    if len(parameters) != 2:
        raise TypeError(f"{where} takes {len(parameters)} parameters; it must be {shape}")
    try:
        hints = get_type_hints(function)
    except NameError as exc:
        raise TypeError(
            f"{where}: an annotation names something not importable at runtime ({exc}); import "
            f"it outside `if TYPE_CHECKING:` so the models can be read; it must be {shape}"
        ) from exc
    input_model = hints.get(parameters[1].name)
    output_model = hints.get("return")
    if not _is_model(input_model) or not _is_model(output_model):
        raise TypeError(
            f"{where} is annotated `{parameters[1].name}: {input_model!r}` and returns "
            f"`{output_model!r}`; it must be {shape} (one model each, no unions or aliases)"
        )
    return input_model, output_model


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
    # The output field whose value alone is the text content block (a seed that returns a
    # list or a string: MCP wants an object in structuredContent, the text carries the seed's
    # value as is). None: the text block is the whole structured JSON.
    text_field: str | None = None

    def entry(self) -> ToolEntry:
        """What the gateway needs of this tool (its schemas generated from its models once, when
        first listed)."""
        return _entry(self)


@functools.cache
def _entry(spec: ToolSpec) -> ToolEntry:
    return ToolEntry(
        name=spec.name,
        group=spec.group,
        scopes=spec.scopes,
        read_only=spec.annotations.read_only,
        text_field=spec.text_field,
        describe=functools.partial(_descriptor, spec),
    )


def _descriptor(spec: ToolSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "inputSchema": input_schema(spec.input_model.model_json_schema(mode="validation")),
        "outputSchema": output_schema(spec.output_model.model_json_schema(mode="serialization")),
        # The tool's `title` above is its display name; the annotation's copy was a
        # duplicate (MCP: `title` wins over `annotations.title`).
        "annotations": spec.annotations.to_wire(),
    }


class ToolGroup(Generic[ServiceT]):
    """The tools of one group and the factory of the service they share.

    A module of rarely called tools can be registered later (`defer`): a group function imports
    it at the first call of one of its tools, so a cold start that serves other tools never
    builds its models. Reading `tools` registers everything first.
    """

    def __init__(
        self,
        name: str,
        build_service: Callable[[], ServiceT] | None = None,
        tools: dict[str, ToolSpec] | None = None,
    ) -> None:
        self.name = name
        # None: the composition root (`shared.app.groups`) binds the factory, because the
        # group's service is put together with other groups' (cross-group reactions).
        self.build_service: Callable[[], ServiceT] = build_service or self._unbound
        self._registered: dict[str, ToolSpec] = dict(tools or {})
        # Tool name → the module that registers it on import, until it is imported.
        self._deferred: dict[str, str] = {}
        self._importing = threading.RLock()

    def _unbound(self) -> ServiceT:
        raise RuntimeError(
            f"tool group {self.name!r} has no service factory: load it through "
            "shared.app.groups.load_group, which binds it"
        )

    def deferred_modules(self) -> list[str]:
        """The modules `defer` declared that are not imported yet."""
        return list(dict.fromkeys(self._deferred.values()))

    @property
    def tools(self) -> dict[str, ToolSpec]:
        """Every tool of the group, in registration order (deferred modules imported now)."""
        for module in dict.fromkeys(self._deferred.values()):
            self._import(module)
        return self._registered

    def spec(self, name: str) -> ToolSpec | None:
        """Tool `name`, importing only the deferred module that registers it (if any)."""
        module = self._deferred.get(name)
        if module is not None:
            self._import(module)
        return self._registered.get(name)

    def defer(self, module: str, tools: Iterable[str]) -> None:
        """Declare that importing `module` registers exactly `tools` on this group."""
        for name in tools:
            if name in self._registered or name in self._deferred:
                raise ValueError(f"tool {name!r} is registered twice")
            self._deferred[name] = module

    def _import(self, module: str) -> None:
        with self._importing:
            declared = {name for name, owner in self._deferred.items() if owner == module}
            if not declared:
                return  # another thread imported it meanwhile
            before = set(self._registered)
            importlib.import_module(module)
            added = set(self._registered) - before
            for name in declared:
                del self._deferred[name]
        if added != declared:
            raise RuntimeError(
                f"{module} registered {sorted(added)} on group {self.name!r}, but "
                f"`defer` declared {sorted(declared)}: make the declaration match the module"
            )

    def tool(
        self,
        *,
        name: str,
        title: str,
        description: str,
        scopes: tuple[str, ...],
        annotations: Annotations,
        text_field: str | None = None,
    ) -> Callable[
        [ToolFunction[ServiceT, InputT, OutputT]], ToolFunction[ServiceT, InputT, OutputT]
    ]:
        """Register a tool function under `name` (decorator); its models come from its
        annotations: `def f(ctx: ToolContext[S], args: In) -> Out`."""

        def register(
            function: ToolFunction[ServiceT, InputT, OutputT],
        ) -> ToolFunction[ServiceT, InputT, OutputT]:
            if name in self._registered:
                raise ValueError(f"tool {name!r} is registered twice")
            input_model, output_model = models_of(name, function)
            self._registered[name] = ToolSpec(
                name=name,
                title=title,
                description=description,
                group=self.name,
                input_model=input_model,
                output_model=output_model,
                scopes=scopes,
                annotations=annotations,
                implementation=function,
                text_field=text_field,
            )
            return function

        return register

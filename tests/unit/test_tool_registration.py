"""Typed tool registration: a tool's input and output models are its function's annotations.

`ToolGroup.tool` reads them (no `input_model=` / `output_model=` arguments), refuses at import a
function that is not `(ctx, args: Model) -> Model`, and is generic so mypy checks the function
against its group's service and the models.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import BaseModel

from shared.app.groups import tool_specs
from shared.tools.registry import READ_ONLY, ToolContext, ToolGroup

if TYPE_CHECKING:
    from shared.memory.models import MemoryOutput

ROOT = Path(__file__).resolve().parents[2]


class Question(BaseModel):
    text: str


class Answer(BaseModel):
    text: str


class Draft(BaseModel):
    text: str


def _group() -> ToolGroup[str]:
    return ToolGroup(name="quiz", build_service=lambda: "service")


def _register(group: ToolGroup[Any], function: Any) -> None:
    group.tool(name="ask", title="Ask", description="Ask.", scopes=(), annotations=READ_ONLY)(
        function
    )


def test_the_models_are_read_from_the_annotations() -> None:
    group = _group()

    @group.tool(name="ask", title="Ask", description="Ask.", scopes=(), annotations=READ_ONLY)
    def ask(ctx: ToolContext[str], args: Question) -> Answer:
        return Answer(text=f"{ctx.service}: {args.text}")

    spec = group.tools["ask"]
    assert (spec.input_model, spec.output_model) == (Question, Answer)
    assert spec.implementation is ask


def test_every_catalog_tool_declares_the_models_its_function_is_annotated_with() -> None:
    from typing import get_type_hints

    for spec in tool_specs().values():
        hints = get_type_hints(spec.implementation)
        assert hints["return"] is spec.output_model, spec.name
        assert spec.input_model in hints.values(), spec.name


def test_a_union_return_is_refused_naming_the_tool_and_the_shape() -> None:
    def ask(ctx: ToolContext[str], args: Question) -> Answer | Draft:
        return Answer(text=args.text)

    with pytest.raises(TypeError) as refused:
        _register(_group(), ask)
    message = str(refused.value)
    assert "tool 'ask'" in message
    assert "returns" in message
    assert "OutputModel" in message


def test_arguments_that_are_not_a_model_are_refused() -> None:
    def ask(ctx: ToolContext[str], args: dict[str, str]) -> Answer:
        return Answer(text=args["text"])

    with pytest.raises(TypeError, match=r"`args: dict\[str, str\]`"):
        _register(_group(), ask)


def test_a_missing_return_annotation_is_refused() -> None:
    def ask(ctx: ToolContext[str], args: Question):  # type: ignore[no-untyped-def]
        return Answer(text=args.text)

    with pytest.raises(TypeError, match="returns `None`"):
        _register(_group(), ask)


def test_a_function_without_exactly_ctx_and_args_is_refused() -> None:
    def ask(ctx: ToolContext[str], args: Question, extra: int) -> Answer:
        return Answer(text=args.text)

    with pytest.raises(TypeError, match="takes 3 parameters"):
        _register(_group(), ask)


def test_an_output_model_imported_only_for_type_checking_is_refused_with_the_fix() -> None:
    def ask(ctx: ToolContext[str], args: Question) -> MemoryOutput:
        raise AssertionError("never called")

    with pytest.raises(TypeError, match="outside `if TYPE_CHECKING:`"):
        _register(_group(), ask)


def test_a_refused_function_registers_nothing() -> None:
    group = _group()

    def ask(ctx: ToolContext[str], args: Question) -> str:
        return args.text

    with pytest.raises(TypeError):
        _register(group, ask)
    assert group.tools == {}


def test_mypy_checks_a_tool_function_against_its_group_and_models(tmp_path: Path) -> None:
    # Given a group over `int` services, a function over `str` services and one returning `int`
    source = tmp_path / "typed_tools.py"
    source.write_text(
        textwrap.dedent(
            """
            from pydantic import BaseModel

            from shared.tools.registry import READ_ONLY, ToolContext, ToolGroup


            class In(BaseModel):
                x: int


            class Out(BaseModel):
                y: int


            GROUP: ToolGroup[int] = ToolGroup(name="g", build_service=lambda: 1)


            @GROUP.tool(name="a", title="a", description="a", scopes=(), annotations=READ_ONLY)
            def other_service(ctx: ToolContext[str], args: In) -> Out:
                return Out(y=args.x)


            @GROUP.tool(name="b", title="b", description="b", scopes=(), annotations=READ_ONLY)
            def not_a_model(ctx: ToolContext[int], args: In) -> int:
                return args.x


            @GROUP.tool(name="c", title="c", description="c", scopes=(), annotations=READ_ONLY)
            def fine(ctx: ToolContext[int], args: In) -> Out:
                return Out(y=args.x + ctx.service)


            def call(ctx: ToolContext[int]) -> Out:
                return fine(ctx, In(x=1))
            """
        )
    )
    # When mypy --strict checks it
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(source)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # Then exactly the two wrong registrations are errors
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 2, done.stdout
    assert 'expected "Callable[[ToolContext[int], In], Out]"' in errors[0]
    assert 'Value of type variable "OutputT"' in errors[1]

"""Execute one envelope against a tool group: the body of every group function."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from shared.storage.values import UnstorableValue
from shared.tools.envelope import Envelope, ErrorInfo, Reply
from shared.tools.errors import Conflict, InvalidArgument, ToolError
from shared.tools.registry import ToolContext, ToolGroup
from shared.tools.validation import describe_validation_error


def execute(group: ToolGroup[Any], envelope: Envelope) -> Reply:
    """Run `envelope.tool` of `group` and wrap its output or its domain error in a `Reply`
    (a storage layer's `UnstorableValue` answers as the `InvalidArgument` of the field it names).

        Arguments are validated again here: a group function trusts no caller, not even the gateway.
    """
    spec = group.spec(envelope.tool)
    if spec is None:
        return Reply(
            error=ErrorInfo(code="unknown_tool", message=f"unknown tool {envelope.tool!r}")
        )
    try:
        arguments = spec.input_model.model_validate(envelope.arguments)
    except ValidationError as exc:
        field, message = describe_validation_error(exc)
        return Reply(error=ErrorInfo(code="invalid_argument", message=message, field=field))
    context = ToolContext(
        principal=envelope.principal, request_id=envelope.request_id, service=group.build_service()
    )
    try:
        output = spec.implementation(context, arguments)
    except ToolError as exc:
        data: dict[str, Any] = {}
        if exc.status is not None:
            data["status"] = exc.status
        if isinstance(exc, Conflict) and exc.holder:
            data["holder"] = exc.holder
        return Reply(
            error=ErrorInfo(code=exc.code, message=exc.message, field=exc.field, data=data or None)
        )
    except UnstorableValue as exc:
        # A store refused a value (a number DynamoDB cannot keep, a record past its size): the
        # caller's argument is at fault, so it answers as that argument's `InvalidArgument`.
        return Reply(
            error=ErrorInfo(code=InvalidArgument.code, message=exc.message, field=exc.field)
        )
    return Reply(result=output.model_dump(mode="json", by_alias=True))

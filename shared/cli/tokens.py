"""Token administration for the CLI: against a running local server, or a deployed stack."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

from shared.config import names

if TYPE_CHECKING:
    from shared.local.discovery import LocalServer


class TokenAdminError(Exception):
    """A token operation failed; the message says why in words for the CLI."""


class TokenAdmin(Protocol):
    def create(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]]: ...

    def list(self, team: str) -> list[dict[str, Any]]: ...

    def revoke(self, token_id: str) -> dict[str, Any]:
        """The revoked record, with `also_revoked`: the ids of the tokens it issued."""
        ...

    def contexts(self, team: str) -> builtins.list[dict[str, Any]]:
        """Seed 004's allow-list contexts as `team` sees them (its own version or the preset)."""
        ...

    def set_context(self, body: dict[str, Any]) -> dict[str, Any]:
        """Give a team its own version of a context (`team`, `name`, `tools` or `all_tools`)."""
        ...

    def reset_context(self, team: str, name: str) -> dict[str, Any]: ...


class LocalServerAdmin:
    """Talks to the `/_local/tokens` API of a `cairn serve` on this machine."""

    def __init__(self, server: LocalServer) -> None:
        self._server = server

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        from shared.local.discovery import AdminCallFailed

        try:
            return self._server.call(method, f"/_local/tokens{path}", body)
        except AdminCallFailed as exc:
            raise TokenAdminError(str(exc)) from exc

    def create(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        created = self._call("POST", "", body)
        return created["secret"], created["record"]

    def list(self, team: str) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = self._call("GET", f"?team={quote(team)}")
        return records

    def revoke(self, token_id: str) -> dict[str, Any]:
        record: dict[str, Any] = self._call("DELETE", f"/{quote(token_id)}")
        return record

    def contexts(self, team: str) -> builtins.list[dict[str, Any]]:
        views: builtins.list[dict[str, Any]] = self._call("GET", f"/contexts?team={quote(team)}")
        return views

    def set_context(self, body: dict[str, Any]) -> dict[str, Any]:
        view: dict[str, Any] = self._call("PUT", "/contexts", body)
        return view

    def reset_context(self, team: str, name: str) -> dict[str, Any]:
        view: dict[str, Any] = self._call("DELETE", f"/contexts/{quote(team)}/{quote(name)}")
        return view


class StackAdmin:
    """Uses AWS credentials: the deployed stack's tokens table and pepper secret."""

    def __init__(self, stack: str, cloudformation: Any = None) -> None:
        from shared import runtime
        from shared.auth.wiring import build_token_service
        from shared.config.stack import StackOutputsError, read_stack, stack_settings

        required = (names.Outputs.TOKENS_TABLE, names.Outputs.TOKEN_PEPPER_SECRET)
        try:
            outputs = read_stack(stack, required, cloudformation)
        except StackOutputsError as exc:
            raise TokenAdminError(str(exc)) from exc
        settings = stack_settings(
            outputs,
            {names.TABLE_TOKENS: names.Outputs.TOKENS_TABLE},
            token_pepper_secret_arn=outputs[names.Outputs.TOKEN_PEPPER_SECRET],
        )
        runtime.configure(settings)
        self._service = build_token_service(settings)

    def create(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        from pydantic import ValidationError

        from shared.auth.models import TokenRequest

        try:
            issued = self._service.issue(TokenRequest.model_validate(body))
        except ValidationError as exc:
            raise TokenAdminError(str(exc)) from exc
        return issued.secret, issued.record.model_dump(mode="json")

    def list(self, team: str) -> list[dict[str, Any]]:
        return [r.model_dump(mode="json") for r in self._service.list_team(team)]

    def revoke(self, token_id: str) -> dict[str, Any]:
        from shared.auth.errors import UnknownToken

        try:
            return self._service.revoke(token_id).to_wire()
        except UnknownToken as exc:
            raise TokenAdminError(str(exc)) from exc

    def contexts(self, team: str) -> builtins.list[dict[str, Any]]:
        return [v.model_dump(mode="json") for v in self._service.contexts(team)]

    def set_context(self, body: dict[str, Any]) -> dict[str, Any]:
        from pydantic import ValidationError

        from shared.app.groups import load_groups
        from shared.auth.contexts import ContextRequest, unknown_tools

        try:
            request = ContextRequest.model_validate(body)
        except ValidationError as exc:
            raise TokenAdminError(str(exc)) from exc
        served = {name for group in load_groups().values() for name in group.tools}
        if unknown := unknown_tools(request, served):
            raise TokenAdminError(f"cairn serves no tool named {', '.join(unknown)}")
        return self._service.set_context(request, by="cli").model_dump(mode="json")

    def reset_context(self, team: str, name: str) -> dict[str, Any]:
        from shared.auth.contexts import CONTEXT_NAMES

        if name not in CONTEXT_NAMES:
            raise TokenAdminError(
                f"unknown context {name!r}; the contexts are {', '.join(CONTEXT_NAMES)}"
            )
        return self._service.reset_context(team, name).model_dump(mode="json")


def token_admin(stack: str | None = None) -> TokenAdmin:
    """The deployed stack named by `stack` or `$CAIRN_STACK_NAME`, else the running local server.

    The rule is `shared.local.discovery.resolve`, shared by every CLI command.
    """
    from shared.local.discovery import DeployedStack, TargetNotFound, resolve

    try:
        target = resolve(stack)
    except TargetNotFound as exc:
        raise TokenAdminError(str(exc)) from exc
    if isinstance(target, DeployedStack):
        return StackAdmin(target.name)
    return LocalServerAdmin(target)

"""Token administration for the CLI: against a running local server, or the deployed stack."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any, Protocol

from pydantic import ValidationError

from shared.config import names


class TokenAdminError(Exception):
    """A token operation failed; the message says why in words for the CLI."""


class TokenAdmin(Protocol):
    def create(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]]: ...

    def list(self, team: str) -> list[dict[str, Any]]: ...

    def revoke(self, token_id: str) -> dict[str, Any]:
        """The revoked record, with `also_revoked`: the ids of the tokens it issued."""
        ...


class LocalServerAdmin:
    """Talks to the `/_local/tokens` API of a `cairn serve` on this machine."""

    def __init__(self, port: int, admin_key: str) -> None:
        self._base = f"http://127.0.0.1:{port}/_local/tokens"
        self._key = admin_key

    def _call(self, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(  # noqa: S310 - a fixed loopback URL
            url,
            data=data,
            method=method,
            headers={"X-Cairn-Admin-Key": self._key, "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            detail = json.loads(exc.read() or b"{}").get("detail", exc.reason)
            if isinstance(detail, list):
                detail = "; ".join(
                    f"`{'.'.join(map(str, d['loc'][1:]))}`: {d['msg']}" for d in detail
                )
            raise TokenAdminError(str(detail)) from exc

    def create(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        created = self._call("POST", self._base, body)
        return created["secret"], created["record"]

    def list(self, team: str) -> list[dict[str, Any]]:
        from urllib.parse import quote

        records: list[dict[str, Any]] = self._call("GET", f"{self._base}?team={quote(team)}")
        return records

    def revoke(self, token_id: str) -> dict[str, Any]:
        from urllib.parse import quote

        record: dict[str, Any] = self._call("DELETE", f"{self._base}/{quote(token_id)}")
        return record


class StackAdmin:
    """Uses AWS credentials: the deployed stack's tokens table and pepper secret."""

    def __init__(self, stack: str, cloudformation: Any = None) -> None:
        import boto3

        from shared import runtime
        from shared.auth.wiring import build_token_service
        from shared.config.settings import Settings

        try:
            client = cloudformation or boto3.client("cloudformation")
            outputs = {
                o["OutputKey"]: o["OutputValue"]
                for o in client.describe_stacks(StackName=stack)["Stacks"][0].get("Outputs", [])
            }
        except Exception as exc:  # botocore raises many types: no credentials, no stack, ...
            raise TokenAdminError(f"cannot read stack {stack!r}: {exc}") from exc
        missing = [
            key
            for key in (names.Outputs.TOKENS_TABLE, names.Outputs.TOKEN_PEPPER_SECRET)
            if key not in outputs
        ]
        if missing:
            raise TokenAdminError(
                f"stack {stack!r} has no output(s) {', '.join(missing)}: is it a cairn stack?"
            )
        settings = Settings.from_env().model_copy(
            update={
                "environment": "aws",
                "storage": "dynamodb",  # a deployed stack's tokens table, whatever CAIRN_STORAGE
                "tables": {
                    **Settings().tables,
                    names.TABLE_TOKENS: outputs[names.Outputs.TOKENS_TABLE],
                },
                "token_pepper_secret_arn": outputs[names.Outputs.TOKEN_PEPPER_SECRET],
            }
        )
        runtime.configure(settings)
        self._service = build_token_service(settings)

    def create(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
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


def token_admin(stack: str | None = None) -> TokenAdmin:
    """The local server named by `$CAIRN_PORT` if one runs there, else the deployed stack."""
    from shared.local.runtime import ADMIN_KEY_FILE, default_data_dir

    port = os.environ.get(names.Env.PORT)
    if port:
        key_file = default_data_dir() / ADMIN_KEY_FILE
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{int(port)}/.well-known/oauth-protected-resource", timeout=2
            ):
                pass
        except (OSError, ValueError):
            pass  # nothing listening there: fall through to the deployed stack
        else:
            if not key_file.exists():
                raise TokenAdminError(
                    f"a server runs on port {port} but {key_file} is missing: "
                    f"set {names.Env.DATA_DIR} to that server's data folder"
                )
            return LocalServerAdmin(int(port), key_file.read_text().strip())
    return StackAdmin(stack or os.environ.get(names.Env.STACK_NAME, "cairn-prod"))

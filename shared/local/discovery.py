"""Which cairn a CLI command talks to: one rule for `cairn tokens`, `cairn index`, ….

A deployed stack when `--stack` or `$CAIRN_STACK_NAME` names one; else a running local server,
found by the port `cairn serve` recorded in the data folder (`server.json`), then by
`$CAIRN_PORT` or the default port. A recorded port nobody answers on is stale (the server was
killed) and is skipped. When there is neither, the error says both ways out.
"""

from __future__ import annotations

import contextlib
import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.config import names
from shared.local.layout import ADMIN_HEADER, ADMIN_KEY_FILE, default_data_dir

SERVER_FILE = "server.json"
_PROBE_PATH = "/.well-known/oauth-protected-resource"


class TargetNotFound(Exception):
    """No target could be resolved; the message says what was tried and how to fix it."""


class AdminCallFailed(Exception):
    """The local server refused or failed an admin call; the message is its reason."""


@dataclass(frozen=True)
class ServerRecord:
    """What `cairn serve` writes to `<data_dir>/server.json` while it runs.

    A dataclass read by hand, not a pydantic model: every CLI command reads it, and pydantic's
    import was a third of `cairn tokens list`."""

    port: int
    pid: int

    def to_json(self) -> str:
        return json.dumps({"port": self.port, "pid": self.pid})

    @classmethod
    def from_json(cls, text: str) -> ServerRecord:
        """The record in `text`; `ValueError` unless it holds two whole numbers."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a server record")
        port, pid = data.get("port"), data.get("pid")
        if not isinstance(port, int) or not isinstance(pid, int) or bool in (type(port), type(pid)):
            raise ValueError("not a server record")
        return cls(port=port, pid=pid)


def record_server(data_dir: Path, port: int) -> Path:
    """Note the port this process serves on, for the CLI to find (written atomically)."""
    path = data_dir / SERVER_FILE
    partial = path.with_suffix(".json.partial")
    partial.write_text(ServerRecord(port=port, pid=os.getpid()).to_json())
    partial.replace(path)
    return path


def forget_server(data_dir: Path) -> None:
    """Remove the record on a clean stop, unless another server has replaced it since."""
    path = data_dir / SERVER_FILE
    record = read_record(data_dir)
    if record is not None and record.pid == os.getpid():
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def read_record(data_dir: Path) -> ServerRecord | None:
    """The data folder's server record, None when absent or unreadable."""
    try:
        return ServerRecord.from_json((data_dir / SERVER_FILE).read_text())
    except (OSError, ValueError):
        return None


def answers(port: int) -> bool:
    """Does a cairn server answer on 127.0.0.1:`port`?"""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{_PROBE_PATH}", timeout=2):
            return True
    except (OSError, ValueError):
        return False


@dataclass(frozen=True)
class LocalServer:
    """A running `cairn serve` and the admin key of its data folder."""

    port: int
    data_dir: Path
    admin_key: str

    def call(self, method: str, path: str, body: object = None, *, timeout: float = 60) -> Any:
        """One admin API call (`/_local/...`); the JSON answer, or `AdminCallFailed`."""
        request = self.request(method, path, body)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise AdminCallFailed(self.reason(exc)) from exc

    def request(self, method: str, path: str, body: object = None) -> urllib.request.Request:
        """An admin API request carrying the key (for callers that read the answer as a stream)."""
        data = body.encode() if isinstance(body, str) else None
        if body is not None and data is None:
            data = json.dumps(body).encode()
        return urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=data,
            method=method,
            headers={ADMIN_HEADER: self.admin_key, "Content-Type": "application/json"},
        )

    def reason(self, exc: urllib.error.HTTPError) -> str:
        """An admin API error in words (validation errors name their fields)."""
        if exc.code == 401:
            return (
                f"the server on port {self.port} refused the admin key of {self.data_dir}: "
                f"set {names.Env.DATA_DIR} to the data folder that server printed at start"
            )
        try:
            detail: Any = json.loads(exc.read() or b"{}").get("detail", exc.reason)
        except ValueError:
            detail = exc.reason
        if isinstance(detail, list):
            detail = "; ".join(f"`{_field(d['loc'])}`: {_message(d['msg'])}" for d in detail)
        return str(detail)


def _field(loc: list[Any]) -> str:
    """`scopes` of a validation error's location: FastAPI's (`body`, `scopes`) or a model's."""
    parts = [str(part) for part in loc]
    return ".".join(parts[1:] if parts[:1] == ["body"] and len(parts) > 1 else parts)


def _message(text: str) -> str:
    # pydantic prefixes a validator's own message with its kind.
    return str(text).removeprefix("Value error, ")


@dataclass(frozen=True)
class DeployedStack:
    """A deployed cairn stack, reached with the AWS credentials of the environment."""

    name: str


def named_stack(flag: str | None) -> str | None:
    """`--stack`, else `$CAIRN_STACK_NAME`, else None."""
    return flag or os.environ.get(names.Env.STACK_NAME) or None


def _candidate_ports(data_dir: Path) -> list[int]:
    ports: list[int] = []
    if (record := read_record(data_dir)) is not None:
        ports.append(record.port)
    raw = os.environ.get(names.Env.PORT)
    if raw is not None and raw.strip():
        if not raw.strip().isdigit() or not 0 < int(raw) <= 65535:
            raise TargetNotFound(
                f"{names.Env.PORT} must be a port number between 1 and 65535 (got {raw!r}); "
                "unset it to use the port the server recorded in its data folder"
            )
        ports.append(int(raw))
    else:
        ports.append(names.DEFAULT_PORT)
    return list(dict.fromkeys(ports))


def find_local_server(data_dir: Path | None = None) -> LocalServer | None:
    """The running local server of `data_dir` (default: the configured data folder), or None."""
    data_dir = data_dir or default_data_dir()
    for port in _candidate_ports(data_dir):
        if not answers(port):
            continue
        key_file = data_dir / ADMIN_KEY_FILE
        if not key_file.exists():
            raise TargetNotFound(
                f"a server runs on port {port} but {key_file} is missing: "
                f"set {names.Env.DATA_DIR} to the data folder that server printed at start"
            )
        return LocalServer(port, data_dir, key_file.read_text().strip())
    return None


def running_local_server(what_needs_it: str) -> LocalServer:
    """The running local server, or `TargetNotFound` saying where it was looked for, how to
    start one, and `what_needs_it` (why the command cannot go on without it)."""
    server = find_local_server()
    if server is None:
        raise TargetNotFound(
            f"no cairn server is running here (looked at {looked_at()}): start it with "
            f"`./cairn serve` (or `make serve`); {what_needs_it}"
        )
    return server


def looked_at(data_dir: Path | None = None) -> str:
    """Where `find_local_server` looked, in words, for error messages."""
    data_dir = data_dir or default_data_dir()
    try:
        ports = ", ".join(str(p) for p in _candidate_ports(data_dir))
    except TargetNotFound:
        ports = "none"
    return f"port(s) {ports}, data folder {data_dir}"


def resolve(stack_flag: str | None) -> LocalServer | DeployedStack:
    """The target of a command that works on a local server or a deployed stack."""
    if stack := named_stack(stack_flag):
        return DeployedStack(stack)
    if server := find_local_server():
        return server
    raise TargetNotFound(
        f"no cairn server is running here (looked at {looked_at()}) and no stack is named. "
        "Either start the local server with `./cairn serve` (or `make serve`), or name a "
        f"deployed stack with --stack NAME or {names.Env.STACK_NAME}=NAME (AWS credentials)."
    )

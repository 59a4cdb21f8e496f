"""`cairn capture`: the client side of seed 003's capture.

- `install` writes a bash/zsh hook and sources it from the shell's rc file. After each command
  the hook starts `cairn capture record` **in the background, disowned**, so the prompt never
  waits: `record` reads the git repo and branch, redacts, appends the event to a local queue
  and sends the queue in batches; while the server is unreachable the queue just grows and the
  next send delivers it (idempotent event ids make a resend harmless).
- `import-claude` / `import-codex` turn agent session transcripts (JSONL) into `claude` events.
- `import-browser` turns a browser history export (JSON or CSV) into `browser` events.
- `flush` sends the queue now.

Configuration (`capture.json`, mode 0600, in `$XDG_CONFIG_HOME/cairn`): the endpoint's base URL
and an `ingest` token. The queue lives in `$XDG_STATE_HOME/cairn/capture-queue.jsonl`.
"""

from __future__ import annotations

import csv
import fcntl
import hashlib
import json
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from shared.knowledge.redaction import redact

BATCH = 200
SEND_EVERY_SECONDS = 10.0
SEND_AT_QUEUED = 50
TIMEOUT_SECONDS = 10.0
HOOK_MARK = "# cairn capture hook"


class CaptureConfig(BaseModel):
    url: str
    token: str


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "cairn"


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "cairn"


def config_path() -> Path:
    return config_dir() / "capture.json"


def queue_path() -> Path:
    return state_dir() / "capture-queue.jsonl"


def load_config() -> CaptureConfig | None:
    path = config_path()
    return CaptureConfig.model_validate_json(path.read_text()) if path.exists() else None


def save_config(config: CaptureConfig) -> Path:
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(config.model_dump_json())
    return path


# --------------------------------------------------------------------------- shell hook

BASH_HOOK = r"""# cairn capture hook (bash): records each command in the background, never blocking.
__cairn_histnum() {
  local line; line=$(HISTTIMEFORMAT= history 1); line=${line#"${line%%[! ]*}"}; echo "${line%% *}"
}
__cairn_preexec() {
  # The DEBUG trap fires before every simple command: act once per new history entry only
  # (an empty Enter, or PROMPT_COMMAND's own commands, add none).
  # `${name-}` throughout: a .bashrc with `set -u` must neither break the hook nor the prompt.
  [ -n "${COMP_LINE-}" ] && return
  [ -n "${__cairn_cmd-}" ] && return
  # No baseline before the first prompt: bash loads ~/.bash_history only after the rc files, so
  # a baseline taken when the hook is sourced would see the last command of an earlier session
  # as new and record it again in every new shell.
  [ -z "${__cairn_hist+set}" ] && return
  local line num
  line=$(HISTTIMEFORMAT= history 1)
  num=${line#"${line%%[! ]*}"}; num=${num%% *}
  [ "$num" = "${__cairn_hist-}" ] && return
  __cairn_hist=$num
  __cairn_cmd=$(printf '%s' "$line" | sed -e 's/^ *[0-9]* *//')
  __cairn_start=$(date +%s%3N 2>/dev/null || echo 0)
}
__cairn_precmd() {
  local ec=$?
  [ -z "${__cairn_hist+set}" ] && __cairn_hist=$(__cairn_histnum)
  if [ -n "${__cairn_cmd-}" ]; then
    local end=$(date +%s%3N 2>/dev/null || echo 0)
    ( CAIRN_CAPTURE=1 "__CAIRN__" capture record --exit-code "$ec" --at-ms "$end" \
        --duration-ms "$((end - ${__cairn_start:-0}))" --cwd "$PWD" -- "$__cairn_cmd" \
        >/dev/null 2>&1 & ) 2>/dev/null
  fi
  __cairn_cmd=
  return $ec
}
trap '__cairn_preexec' DEBUG
case ";${PROMPT_COMMAND-};" in
  *";__cairn_precmd;"*) ;;
  *) PROMPT_COMMAND="__cairn_precmd${PROMPT_COMMAND:+;$PROMPT_COMMAND}";;
esac
"""

ZSH_HOOK = r"""# cairn capture hook (zsh): records each command in the background, never blocking.
zmodload zsh/datetime 2>/dev/null
# Declared global up front: a user's `setopt nounset` would fail the first prompt's check, and
# `warn_create_global` would print a warning at each command.
typeset -g __cairn_cmd= __cairn_start=0
__cairn_preexec() {
  emulate -L zsh  # the user's options (ksh_arrays, sh_word_split, ...) stay out of the hook
  __cairn_cmd=$1
  __cairn_start=$EPOCHREALTIME
}
__cairn_precmd() {
  local ec=$?
  emulate -L zsh
  if [[ -n $__cairn_cmd ]]; then
    # Integer milliseconds: a float can print in exponent form (1e-05), which `record` refuses.
    local -i end ms
    (( end = EPOCHREALTIME * 1000, ms = end - __cairn_start * 1000 ))
    ( CAIRN_CAPTURE=1 "__CAIRN__" capture record --exit-code "$ec" --at-ms "$end" \
        --duration-ms "$ms" --cwd "$PWD" -- "$__cairn_cmd" >/dev/null 2>&1 & ) 2>/dev/null
  fi
  __cairn_cmd=
}
autoload -Uz add-zsh-hook
add-zsh-hook preexec __cairn_preexec
add-zsh-hook precmd __cairn_precmd
"""


def hook_script(shell: str, cairn: str) -> str:
    template = {"bash": BASH_HOOK, "zsh": ZSH_HOOK}[shell]
    return template.replace("__CAIRN__", cairn)


def install(shell: str, cairn: str, home: Path | None = None) -> tuple[Path, Path]:
    """Write the hook for `shell` and source it from its rc file (once); returns both paths."""
    home = home or Path.home()
    hook = config_dir() / f"hook.{shell}"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(hook_script(shell, cairn))
    rc = home / (".bashrc" if shell == "bash" else ".zshrc")
    line = f'{HOOK_MARK}\n[ -f "{hook}" ] && source "{hook}"\n'
    existing = rc.read_text() if rc.exists() else ""
    if HOOK_MARK not in existing:
        with rc.open("a") as handle:
            handle.write(("\n" if existing and not existing.endswith("\n") else "") + line)
    return hook, rc


# --------------------------------------------------------------------------- events


def _git(cwd: str, *args: str) -> str:
    try:
        done = subprocess.run(  # noqa: S603 - fixed program, no shell
            ["git", "-C", cwd, *args],  # noqa: S607
            capture_output=True,
            text=True,
            timeout=2,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def repo_name(remote: str) -> str:
    """`owner/repo` of a git remote URL (ssh or https); '' when it is not one.

    >>> repo_name("git@github.com:acme/billing.git")
    'acme/billing'
    """
    match = re.search(r"[:/]([^/:]+/[^/]+?)(?:\.git)?/?$", remote)
    return match.group(1) if match else ""


def event_id(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:32]


def shell_event(
    command: str, exit_code: int, duration_ms: int, cwd: str, now_ms: int | None = None
) -> dict[str, Any]:
    """One shell event, redacted here too: a secret never leaves the machine."""
    now_ms = now_ms or int(time.time() * 1000)
    host = socket.gethostname()
    root = _git(cwd, "rev-parse", "--show-toplevel")
    event: dict[str, Any] = {
        "id": "sh-" + event_id(host, now_ms, cwd, command),
        "source": "shell",
        "timestamp": now_ms,
        "command": redact(command)[:16_000],
        "exit_code": exit_code,
        "duration_ms": max(0, duration_ms),
        "cwd": cwd,
        "host": host,
    }
    if root:
        event["repo_root"] = root
        if branch := _git(cwd, "symbolic-ref", "--short", "-q", "HEAD"):
            event["git_branch"] = branch
        if name := repo_name(_git(cwd, "remote", "get-url", "origin")):
            event["git_repo"] = name
    return event


class Queue:
    """Events waiting to be sent: one JSON line each, appended under an exclusive lock."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, events: Iterable[dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            for event in events:
                handle.write(json.dumps(event) + "\n")

    def size(self) -> int:
        if not self.path.exists():
            return 0
        with self.path.open() as handle:
            return sum(1 for _ in handle)

    def flush(self, send: Any) -> tuple[int, int]:
        """Send queued events in batches; what was not delivered stays queued.

        Returns (sent, left). One sender at a time: a second flush finds the lock held and
        leaves (the first one sends everything).
        """
        if not self.path.exists():
            return 0, 0
        lock = self.path.with_suffix(".lock")
        with lock.open("w") as guard:
            try:
                fcntl.flock(guard, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return 0, self.size()
            with self.path.open("r+") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX)
                lines = [line for line in handle.read().splitlines() if line.strip()]
                sent = 0
                try:
                    for start in range(0, len(lines), BATCH):
                        batch = [json.loads(line) for line in lines[start : start + BATCH]]
                        send(batch)
                        sent += len(batch)
                finally:
                    handle.seek(0)
                    handle.truncate()
                    handle.writelines(line + "\n" for line in lines[sent:])
            stamp = self.path.with_suffix(".sent")
            stamp.touch()
            return sent, len(lines) - sent

    def due(self) -> bool:
        stamp = self.path.with_suffix(".sent")
        last = stamp.stat().st_mtime if stamp.exists() else 0.0
        return self.size() >= SEND_AT_QUEUED or time.time() - last >= SEND_EVERY_SECONDS


class SendFailed(Exception):
    """The endpoint refused the batch or could not be reached (the batch stays queued)."""


def http_sender(config: CaptureConfig) -> Any:
    url = config.url.rstrip("/") + "/ingest/events"

    def send(events: list[dict[str, Any]]) -> None:
        request = urllib.request.Request(  # noqa: S310 - the configured endpoint
            url,
            data=json.dumps({"events": events}).encode(),
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {config.token}",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS):  # noqa: S310
                return
        except urllib.error.HTTPError as exc:
            if exc.code == 400:
                return  # a batch the server refuses as invalid is dropped, not retried forever
            raise SendFailed(f"{url}: HTTP {exc.code}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise SendFailed(f"{url}: {exc}") from exc

    return send


# --------------------------------------------------------------------------- importers


def _ms(value: Any) -> int | None:
    if isinstance(value, int | float):
        number = int(value)
        if number > 10**17:  # Chrome's microseconds since 1601
            return number // 1000 - 11_644_473_600_000
        return number if number > 10**11 else number * 1000
    if isinstance(value, str) and value:
        try:
            return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
        except ValueError:
            return None
    return None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, dict)
            and block.get("type") in ("text", "input_text", "output_text")
        )
    return ""


def _tools(content: Any) -> list[str]:
    if not isinstance(content, list):
        return []
    return [
        str(block.get("name"))
        for block in content
        if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name")
    ]


def _records(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(errors="replace") as handle:
        for line in handle:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield record


def _session_event(
    harness: str,
    session: str,
    first: int | None,
    user: list[str],
    assistant: list[str],
    tools: list[str],
    messages: int,
    cwd: str,
    branch: str,
    repo: str,
) -> dict[str, Any] | None:
    if first is None or not (user or assistant):
        return None
    asked = " ".join(user[0].split())[:600] if user else ""
    answered = " ".join(assistant[-1].split())[:900] if assistant else ""
    summary = redact(f"Asked: {asked} Outcome: {answered}".strip())
    event: dict[str, Any] = {
        "id": f"{harness}-{event_id(session)}",
        "source": "claude",
        "timestamp": first,
        "harness": harness,
        "session_id": session[:256],
        "summary_text": summary[:16_000],
        "message_count": messages,
        "tool_calls": tools[:500],
    }
    if cwd:
        event["cwd"] = cwd
    if branch:
        event["git_branch"] = branch
    if repo:
        event["git_repo"] = repo
    return event


def claude_code_session(path: Path) -> dict[str, Any] | None:
    """One `claude` event of a Claude Code transcript (`~/.claude/projects/*/<session>.jsonl`)."""
    session, cwd, branch, first = path.stem, "", "", None
    user: list[str] = []
    assistant: list[str] = []
    tools: list[str] = []
    messages = 0
    for record in _records(path):
        kind = record.get("type")
        if kind not in ("user", "assistant"):
            continue
        session = str(record.get("sessionId") or session)
        cwd = str(record.get("cwd") or cwd)
        branch = str(record.get("gitBranch") or branch)
        stamp = _ms(record.get("timestamp"))
        first = stamp if first is None else first
        message = record.get("message") or {}
        content = message.get("content") if isinstance(message, dict) else None
        text = _text(content)
        messages += 1
        tools += _tools(content)
        if kind == "user" and text and not record.get("isMeta"):
            user.append(text)
        elif kind == "assistant" and text:
            assistant.append(text)
    return _session_event(
        "claude-code", session, first, user, assistant, tools, messages, cwd, branch, ""
    )


def codex_session(path: Path) -> dict[str, Any] | None:
    """One `claude`-source event of a Codex rollout (`~/.codex/sessions/**/rollout-*.jsonl`)."""
    session, cwd, branch, repo, first = path.stem, "", "", "", None
    user: list[str] = []
    assistant: list[str] = []
    tools: list[str] = []
    messages = 0
    for record in _records(path):
        inner = record.get("payload")
        payload: dict[str, Any] = inner if isinstance(inner, dict) else record
        kind = record.get("type")
        stamp = _ms(record.get("timestamp") or payload.get("timestamp"))
        if first is None and stamp is not None:
            first = stamp
        if kind == "session_meta" or (
            "id" in payload and "cwd" in payload and "type" not in payload
        ):
            session = str(payload.get("id") or session)
            cwd = str(payload.get("cwd") or cwd)
            found = payload.get("git")
            git: dict[str, Any] = found if isinstance(found, dict) else {}
            branch = str(git.get("branch") or branch)
            repo = repo_name(str(git.get("repository_url") or "")) or repo
            continue
        item_type = payload.get("type")
        if item_type == "message":
            messages += 1
            text = _text(payload.get("content"))
            if payload.get("role") == "user" and text and not text.startswith("<"):
                user.append(text)
            elif payload.get("role") == "assistant" and text:
                assistant.append(text)
        elif item_type in ("function_call", "local_shell_call", "custom_tool_call"):
            tools.append(str(payload.get("name") or item_type))
    return _session_event(
        "codex", session, first, user, assistant, tools, messages, cwd, branch, repo
    )


def browser_history(path: Path) -> list[dict[str, Any]]:
    """`browser` events of a history export: a JSON list (or {"history": [...]}) of objects
    with url, title and a visit time, or a CSV with url, title and visit time columns."""
    rows: list[dict[str, Any]]
    if path.suffix.lower() == ".csv":
        with path.open(newline="", errors="replace") as handle:
            rows = list(csv.DictReader(handle))
    else:
        loaded = json.loads(path.read_text(errors="replace"))
        rows = loaded.get("history", []) if isinstance(loaded, dict) else loaded
    events: list[dict[str, Any]] = []
    for row in rows:
        if not isinstance(row, dict):
            continue
        url = str(row.get("url") or "")
        if not url.startswith(("http://", "https://")):
            continue
        stamp = None
        for key in ("visitTime", "lastVisitTime", "visit_time", "last_visit_time", "time", "date"):
            value = row.get(key)
            if isinstance(value, str) and value.isdigit():
                value = int(value)
            if (stamp := _ms(value)) is not None:
                break
        if stamp is None:
            continue
        events.append(
            {
                "id": "br-" + event_id(url, stamp),
                "source": "browser",
                "timestamp": stamp,
                "url": redact(url)[:4_096],
                "title": redact(str(row.get("title") or ""))[:1_024] or None,
            }
        )
    return events

"""`cairn capture`: transcript and history importers, the offline queue, the hook's install."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from shared.knowledge import capture
from shared.knowledge.models import EventIn

FIXTURES = Path(__file__).parent / "fixtures"


def test_a_claude_code_session_becomes_one_claude_event() -> None:
    event = capture.claude_code_session(FIXTURES / "claude_code_session.jsonl")
    assert event is not None
    EventIn.model_validate(event)  # what the server accepts
    assert event["source"] == "claude"
    assert event["harness"] == "claude-code"
    assert event["session_id"] == "6f1c2d3e-aaaa-bbbb-cccc-123456789abc"
    assert event["cwd"] == "/home/dev/src/billing"
    assert event["git_branch"] == "fix/rounding"
    assert event["tool_calls"] == ["Read", "Edit"]
    assert event["message_count"] == 4
    assert "off by a cent" in event["summary_text"]
    assert "ROUND_HALF_EVEN" in event["summary_text"]
    assert "abcdEFGHijklMNOP" not in event["summary_text"]  # redacted before it leaves
    assert event["timestamp"] == 1_795_168_800_000  # 2026-11-20T10:00:00Z


def test_a_codex_rollout_becomes_one_claude_source_event() -> None:
    event = capture.codex_session(FIXTURES / "codex_rollout.jsonl")
    assert event is not None
    EventIn.model_validate(event)
    assert (event["harness"], event["session_id"]) == ("codex", "0199-codex-session")
    assert (event["git_repo"], event["git_branch"]) == ("acme/gateway", "fix/rate-limit")
    assert event["tool_calls"] == ["shell"]
    assert "bursts through" in event["summary_text"]
    assert "environment_context" not in event["summary_text"]
    assert "refills per second" in event["summary_text"]


def test_importing_the_same_session_twice_gives_the_same_id() -> None:
    first = capture.claude_code_session(FIXTURES / "claude_code_session.jsonl")
    again = capture.claude_code_session(FIXTURES / "claude_code_session.jsonl")
    assert first is not None
    assert again is not None
    assert first["id"] == again["id"]


def test_browser_history_exports_json_and_csv() -> None:
    visits = capture.browser_history(FIXTURES / "history.json")
    assert [v["url"] for v in visits] == [
        "https://docs.stripe.com/webhooks/signatures",
        "https://example.com/reset?token=[REDACTED]&x=1",
    ]
    assert visits[0]["timestamp"] == 1_763_630_000_123
    for visit in visits:
        EventIn.model_validate(visit)
    csv_visits = capture.browser_history(FIXTURES / "history.csv")
    assert [(v["title"], v["timestamp"]) for v in csv_visits] == [
        ("The Rust Book", 1_795_165_200_000)
    ]


def test_a_shell_event_reads_git_and_redacts(tmp_path: Path) -> None:
    event = capture.shell_event(
        "export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789", 0, 12, str(tmp_path)
    )
    EventIn.model_validate(event)
    assert "ghp_" not in event["command"]
    assert event["cwd"] == str(tmp_path)
    assert "git_branch" not in event  # not a work tree


def test_repo_names_of_remotes() -> None:
    assert capture.repo_name("https://github.com/acme/billing.git") == "acme/billing"
    assert capture.repo_name("git@github.com:acme/gateway") == "acme/gateway"
    assert capture.repo_name("") == ""


def test_the_queue_keeps_what_could_not_be_sent(tmp_path: Path) -> None:
    queue = capture.Queue(tmp_path / "q.jsonl")
    queue.append([{"id": f"e{i}"} for i in range(450)])
    sent: list[list[dict[str, Any]]] = []

    def flaky(batch: list[dict[str, Any]]) -> None:
        if len(sent) == 1:
            raise capture.SendFailed("offline")
        sent.append(batch)

    with pytest.raises(capture.SendFailed):
        queue.flush(flaky)
    assert queue.size() == 250  # the first batch of 200 left; the rest waits
    assert queue.flush(lambda batch: None) == (250, 0)
    assert queue.size() == 0


def test_install_writes_the_hook_and_sources_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    for _ in range(2):
        hook, rc = capture.install("zsh", "/opt/cairn", home=tmp_path)
    assert rc.read_text().count(capture.HOOK_MARK) == 1
    assert '"/opt/cairn" capture record' in hook.read_text()
    assert "add-zsh-hook precmd __cairn_precmd" in hook.read_text()


def test_the_record_command_queues_the_event_as_the_hook_calls_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from shared.cli import build_parser

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    argv = ["capture", "record", "--exit-code", "2", "--at-ms", "1795168800000"]
    argv += ["--duration-ms", "31", "--cwd", str(tmp_path), "--", "ls", "-la", "--", "x"]
    args = build_parser().parse_args(argv)
    assert args.run(args) in (0, 2)  # queued; no capture.json, so nothing is sent
    (line,) = capture.queue_path().read_text().splitlines()
    event = json.loads(line)
    assert (event["command"], event["exit_code"], event["duration_ms"]) == ("ls -la -- x", 2, 31)
    assert event["timestamp"] == 1_795_168_800_000

"""The deterministic enricher: events → sessions → knowledge nodes and entities, with no model.

- **Sessions by time and place.** Shell events of one host and cwd join one session while no
  more than `SESSION_GAP_MS` passes between them; an agent session (its `session_id`) is one
  node; browser visits group by domain within the gap; a workflow's events group by its id.
- **Summaries and outcomes from commands and exit codes.** The summary names the place, the
  branch and the distinct commands; the outcome is success when every command exited 0,
  failure when the last one failed, partial when an earlier one did.
- **Entities by parsing**: paths (file), the command word (tool), `NAME=` and `$NAME`
  (env_var), ssh/scp targets and URL hosts (host), browser domains (domain), `aws <service>`,
  `systemctl <unit>` and `docker compose` services (service), git repos (repo), project roots
  (project), and the intent (concept).

Pure functions here; `Enricher` applies them to the stores.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlparse

from shared.knowledge.models import EntitySighting, Event, KnowledgeNode, Outcome
from shared.knowledge.ports import (
    ChatModel,
    EntityStore,
    EventStore,
    ModelUnavailable,
    NodeIndex,
    NodeStore,
)
from shared.knowledge.redaction import redact

_REFINE_SYSTEM = (
    "You summarise a developer's work session for a team knowledge base. Be factual and short; "
    "never invent commands, files or outcomes that are not in the session."
)

SESSION_GAP_MS = 30 * 60 * 1000
MAX_EVENTS_PER_NODE = 200
_WRAPPERS = {"sudo", "time", "nohup", "env", "command", "exec", "nice", "caffeinate", "xargs"}
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=")
_ENV_REFERENCE = re.compile(r"\$\{?([A-Z_][A-Z0-9_]{2,})\}?")
_FILE_EXTENSIONS = {
    "py", "rs", "go", "ts", "tsx", "js", "jsx", "java", "kt", "rb", "c", "h", "cc", "cpp", "hpp",
    "md", "txt", "json", "yaml", "yml", "toml", "ini", "cfg", "sh", "bash", "zsh", "sql", "html",
    "css", "scss", "lock", "env", "tf", "proto", "xml", "csv", "ipynb", "swift", "dockerfile",
    "gz", "tgz", "zip", "tar", "whl", "log", "conf", "pem", "sqlite", "db",
}  # fmt: skip
_INTENTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("testing", ("pytest", "test", "jest", "vitest", "tox", "nox", "mocha", "rspec")),
    ("deployment", ("deploy", "kubectl", "helm", "terraform", "cdk", "serverless", "fly")),
    ("debugging", ("gdb", "lldb", "strace", "pdb", "logs", "tail", "journalctl", "debug")),
    ("building", ("make", "build", "cargo", "gcc", "cmake", "webpack", "tsc", "docker")),
    ("dependency management", ("pip", "uv", "npm", "yarn", "pnpm", "poetry", "bundle", "brew")),
    ("linting", ("ruff", "mypy", "eslint", "clippy", "flake8", "black", "prettier", "lint")),
    ("version control", ("git", "gh")),
    ("database work", ("psql", "mysql", "sqlite3", "redis-cli", "mongo", "migrate")),
    ("remote operations", ("ssh", "scp", "rsync", "curl", "wget")),
)
_SUCCESS = {"success", "succeeded", "completed", "done", "passed", "ok"}
_FAILURE = {"failure", "failed", "error", "cancelled", "timed_out", "timeout"}


def node_uuid(team: str, session_key: str, first_event_id: str) -> str:
    """A node's id: stable for its session, so re-enriching the same events updates it."""
    digest = hashlib.sha256(f"{team}\x00{session_key}\x00{first_event_id}".encode()).hexdigest()
    return "kn_" + digest[:24]


def session_key(event: Event) -> str:
    if event.source == "shell":
        return f"shell|{event.host or ''}|{event.cwd or ''}"
    if event.source == "claude":
        return f"claude|{event.session_id or event.id}"
    if event.source == "browser":
        return f"browser|{_domain(event.url or '')}"
    return f"workflow|{event.session_id or event.id}"


def joins_by_time(event: Event) -> bool:
    """Shell and browser sessions close after a gap; agent sessions and workflows by id."""
    return event.source in ("shell", "browser")


def hostname(url: str) -> str:
    """The URL's host, '' when it has none or cannot be parsed (a redacted `[REDACTED]` host
    reads as a malformed IPv6 literal)."""
    try:
        return urlparse(url).hostname or ""
    except ValueError:
        return ""


def _domain(url: str) -> str:
    return hostname(url).removeprefix("www.")


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command, comments=False)
    except ValueError:
        return command.split()


def segments(command: str) -> list[str]:
    """The simple commands of a command line: split at `;`, `&&`, `||`, `|` and `&` outside
    quotes (not at a redirection's `&`).

    A quoted `;` is an argument (`python -c "import sys; sys.exit(3)"` is one command, not a
    program named `sys.exit(3)"`).

    >>> segments("make test && python -c 'a; b' | tee log")
    ['make test', "python -c 'a; b'", 'tee log']
    """
    parts: list[str] = []
    current: list[str] = []
    quote = ""
    index = 0
    while index < len(command):
        char = command[index]
        if quote:
            if char == "\\" and quote == '"' and index + 1 < len(command):
                current.append(command[index : index + 2])
                index += 2
                continue
            quote = "" if char == quote else quote
        elif char == "\\" and index + 1 < len(command):
            current.append(command[index : index + 2])
            index += 2
            continue
        elif char in "'\"":
            quote = char
        elif char in ";|&":
            double = command[index : index + 2] in ("&&", "||")
            # A lone `&` ends a background command, unless it is a redirection (2>&1, &>f).
            redirect = (
                char == "&"
                and not double
                and (
                    command[index - 1 : index] in ("<", ">")
                    or command[index + 1 : index + 2] == ">"
                )
            )
            if not redirect:
                parts.append("".join(current))
                current = []
                index += 2 if double else 1
                continue
        current.append(char)
        index += 1
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def command_word(command: str) -> str:
    """The program a command runs: env assignments and wrappers (sudo, time…) skipped.

    >>> command_word("AWS_PROFILE=x sudo /usr/bin/aws s3 ls")
    'aws'
    """
    for word in _words((segments(command) or [""])[0]):
        if _ASSIGNMENT.match(word) or word in _WRAPPERS or word.startswith("-"):
            continue
        return posixpath.basename(word)
    return ""


def intent_of(words: Sequence[str]) -> str:
    lowered = [w.lower() for w in words]
    for intent, markers in _INTENTS:
        if any(m in w for w in lowered for m in markers):
            return intent
    return ""


def _canonical_path(path: str, event: Event) -> str:
    root = event.repo_root or ""
    if path.startswith("/") and root and path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1 :]
    if path.startswith("~/") or path.startswith("/"):
        return path
    return posixpath.normpath(path.removeprefix("./"))


def _looks_like_file(word: str) -> bool:
    if word.startswith("-") or "://" in word or "=" in word or len(word) > 300:
        return False
    base = posixpath.basename(word.rstrip("/"))
    if "." in base:
        return base.rsplit(".", 1)[1].lower() in _FILE_EXTENSIONS
    return base in ("Makefile", "Dockerfile", "Justfile", "Procfile")


def project_name(event: Event) -> str:
    if event.git_repo:
        return event.git_repo.rsplit("/", 1)[-1]
    place = event.repo_root or event.cwd or ""
    return posixpath.basename(place.rstrip("/"))


def entities_of(event: Event) -> list[EntitySighting]:
    """Every entity one event mentions, with canonical names (deduplicated)."""
    place = event.repo_root or event.git_repo or event.cwd or ""
    found: dict[tuple[str, str], str] = {}

    def add(kind: str, name: str, canonical: str | None = None) -> None:
        name = name.strip()
        if name:
            found.setdefault((kind, (canonical or name).strip()), name)

    if event.source != "browser":
        if project := project_name(event):
            add("project", project)
        if event.git_repo:
            add("repo", event.git_repo, event.git_repo.lower())
        if event.host:
            add("host", event.host, event.host.lower())
    texts: list[str] = []
    if event.command:
        texts.append(event.command)
        for segment in segments(event.command):
            if word := command_word(segment):
                add("tool", word, word.lower())
            words = _words(segment)
            for word in words:
                if match := _ASSIGNMENT.match(word):
                    add("env_var", match.group(1))
                elif _looks_like_file(word):
                    add("file", word, _canonical_path(word, event))
                elif "@" in word and not word.startswith("-") and "/" not in word.split("@")[0]:
                    target = word.split("@", 1)[1].split(":", 1)[0]
                    if target and re.fullmatch(r"[A-Za-z0-9.-]+", target):
                        add("host", target, target.lower())
            lowered = [w.lower() for w in words]
            program = command_word(segment)
            if program == "aws":
                # The service is the first word after the program (wrappers and flags skipped).
                after = [posixpath.basename(w) for w in lowered].index("aws") + 1
                service = next((w for w in lowered[after:] if not w.startswith("-")), "")
                if service:
                    add("service", f"aws {service}", f"aws:{service}")
            if "systemctl" in lowered:
                unit = lowered[-1]
                if unit != "systemctl" and not unit.startswith("-"):
                    add("service", unit)
            if lowered[:2] == ["docker", "compose"] and len(lowered) > 3:
                add("service", lowered[-1])
    if event.summary_text:
        texts.append(event.summary_text)
    for tool in event.tool_calls:
        add("tool", tool, tool.lower())
    for text in texts:
        for reference in _ENV_REFERENCE.findall(text):
            add("env_var", reference)
        for url in re.findall(r"https?://[^\s\"'<>]+", text):
            if host := hostname(url):
                add("host", host, host.lower())
    if event.source == "browser" and (domain := _domain(event.url or "")):
        add("domain", domain, domain.lower())
    intent = intent_of(_intent_words(event))
    if intent:
        add("concept", intent)
    return [
        EntitySighting(
            type=kind,
            name=name,
            canonical=canonical,
            seen_at=event.timestamp,
            place=place,
        )
        for (kind, canonical), name in found.items()
    ]


def _intent_words(event: Event) -> list[str]:
    if event.command:
        return [command_word(s) for s in segments(event.command)] + _words(event.command)[:6]
    return (event.summary_text or event.title or "").split()[:40] + list(event.tool_calls)


def outcome_of(events: Sequence[Event]) -> Outcome:
    """success: every command exited 0; failure: the last one failed; partial: one before did."""
    codes = [e.exit_code for e in events if e.exit_code is not None]
    statuses = [e.status.lower() for e in events if e.status]
    if codes:
        if codes[-1] != 0:
            return "failure"
        return "partial" if any(c != 0 for c in codes) else "success"
    if statuses:
        if statuses[-1] in _FAILURE:
            return "failure"
        if statuses[-1] in _SUCCESS:
            return "partial" if any(s in _FAILURE for s in statuses) else "success"
    return "success" if events and events[0].source == "claude" else "unknown"


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _where(event: Event) -> str:
    place = project_name(event) or event.cwd or ""
    branch = f" ({event.git_branch})" if event.git_branch else ""
    return f"{place}{branch}" if place else branch.strip(" ()")


def summarize(events: Sequence[Event]) -> tuple[str, str]:
    """(summary, intent) of one session's events (in time order)."""
    first = events[0]
    if first.source == "shell":
        commands = list(dict.fromkeys(_short(e.command or "", 80) for e in events))
        failed = [e for e in events if e.exit_code not in (None, 0)]
        shown = "; ".join(f"`{c}`" for c in commands[:4])
        more = f" and {len(commands) - 4} more" if len(commands) > 4 else ""
        noun = "command" if len(events) == 1 else "commands"
        summary = f"Ran {len(events)} {noun} in {_where(first)}: {shown}{more}"
        if failed:
            summary += f"; {len(failed)} failed (last: `{_short(failed[-1].command or '', 60)}`" + (
                f", exit {failed[-1].exit_code})"
            )
        words = [command_word(e.command or "") for e in events]
        return summary, intent_of(words)
    if first.source == "claude":
        text = " ".join(e.summary_text or "" for e in events)
        harness = first.harness or "agent"
        return f"{harness} session in {_where(first)}: {_short(text, 240)}", intent_of(
            _intent_words(first)
        )
    if first.source == "browser":
        titles = list(dict.fromkeys(_short(e.title or e.url or "", 70) for e in events))
        return f"Read {_domain(first.url or '')}: " + "; ".join(titles[:4]), "research"
    text = "; ".join(dict.fromkeys(_short(e.summary_text or "", 160) for e in events))
    return f"Workflow: {_short(text, 300)}", intent_of(_intent_words(first))


def build_node(uuid: str, key: str, events: Sequence[Event]) -> KnowledgeNode:
    """The node of one session: summary, intent, outcome, tags, embed_text and links."""
    ordered = sorted(events, key=lambda e: (e.timestamp, e.id))
    last = ordered[-1]
    summary, intent = summarize(ordered)
    sightings = [s for e in ordered for s in entities_of(e)]
    entity_keys = list(dict.fromkeys(f"{s.type}:{s.canonical}" for s in sightings))
    tools = list(dict.fromkeys(s.canonical for s in sightings if s.type == "tool"))
    tags = list(dict.fromkeys([last.source, *([intent] if intent else []), *tools[:8]]))
    detail: list[str] = []
    for event in ordered:
        if event.source == "shell":
            detail.append(f"{event.command} (exit {event.exit_code})")
        elif event.source == "browser":
            detail.append(f"{event.title or ''} {event.url or ''}")
        else:
            detail.append(event.summary_text or "")
    names = list(dict.fromkeys(s.name for s in sightings))
    embed_text = _short(
        " ".join([summary, intent, *detail, *names, last.cwd or "", last.git_branch or ""]), 4_000
    )
    return KnowledgeNode(
        uuid=uuid,
        summary=summary,
        intent=intent,
        outcome=outcome_of(ordered),
        tags=tags,
        embed_text=embed_text,
        cwd=last.cwd or "",
        git_branch=last.git_branch or "",
        git_repo=last.git_repo or "",
        captured_at=last.timestamp,
        started_at=ordered[0].timestamp,
        linked_event_ids=[e.id for e in ordered if e.source in ("shell", "workflow")],
        linked_claude_session_ids=list(
            dict.fromkeys(e.session_id or e.id for e in ordered if e.source == "claude")
        ),
        linked_browser_event_ids=[e.id for e in ordered if e.source == "browser"],
        sources=list(dict.fromkeys(e.source for e in ordered)),
        places=list(dict.fromkeys(p for e in ordered for p in e.places)),
        branches=list(dict.fromkeys(e.git_branch for e in ordered if e.git_branch)),
        entities=entity_keys,
        session_key=key,
        member_event_ids=[e.id for e in ordered],
    )


@dataclass(eq=False)
class Enricher:
    """Turns stored events into nodes and entities, and indexes the nodes."""

    events: EventStore
    nodes: NodeStore
    entities: EntityStore
    index: NodeIndex
    model: Callable[[], ChatModel | None] = lambda: None

    def enrich(self, team: str, event_ids: Sequence[str]) -> list[KnowledgeNode]:
        """Enrich these (stored) events: sessionize, (re)build their nodes, record entities."""
        events = sorted(
            (e for e in self.events.get_many(team, event_ids) if e.probe_tag is None),
            key=lambda e: (e.timestamp, e.id),
        )
        if not events:
            return []
        # Working set of the nodes touched by this batch: uuid → (key, member event ids, node).
        members: dict[str, list[str]] = {}
        keys: dict[str, str] = {}
        latest: dict[str, tuple[str, int, int]] = {}  # session key → (uuid, last ts, size)
        for event in events:
            key = session_key(event)
            current = latest.get(key)
            if current is None:
                after = event.timestamp - SESSION_GAP_MS if joins_by_time(event) else 0
                found = self.nodes.open_session(team, key, after)
                if found is not None and len(found.member_event_ids) < MAX_EVENTS_PER_NODE:
                    ids = self._member_ids(found)
                    members.setdefault(found.uuid, ids)
                    keys[found.uuid] = key
                    current = (found.uuid, found.captured_at, len(ids))
            if (
                current is not None
                and (not joins_by_time(event) or event.timestamp - current[1] <= SESSION_GAP_MS)
                and current[2] < MAX_EVENTS_PER_NODE
            ):
                uuid = current[0]
            else:
                uuid = node_uuid(team, key, event.id)
                members.setdefault(uuid, [])
                keys[uuid] = key
            if event.id not in members[uuid]:
                members[uuid].append(event.id)
            latest[key] = (
                uuid,
                max(event.timestamp, current[1] if current else 0),
                len(members[uuid]),
            )
        built: list[KnowledgeNode] = []
        for uuid, ids in members.items():
            stored = self.events.get_many(team, ids)
            if stored:
                node = self._refine(build_node(uuid, keys[uuid], stored))
                self.nodes.put(team, node)
                built.append(node)
        self.entities.record(team, [s for e in events for s in entities_of(e)])
        self.index.index(team, built)
        return built

    def _refine(self, node: KnowledgeNode) -> KnowledgeNode:
        """With a model configured, let it rewrite the summary and intent from the session's
        deterministic draft; any failure keeps the draft (enrichment never depends on it)."""
        model = self.model()
        if model is None:
            return node
        prompt = (
            "Session of a developer's work (commands with exit codes, or an agent session):\n"
            f"{node.embed_text[:3_000]}\n\nDraft summary: {node.summary}\n\n"
            'Reply with JSON only: {"summary": "<one sentence: what was done and how it '
            'ended>", "intent": "<2-4 words>"}'
        )
        try:
            reply = json.loads(model.complete(_REFINE_SYSTEM, prompt).strip().strip("`"))
            summary = redact(str(reply["summary"]).strip())[:500]
            intent = redact(str(reply.get("intent", node.intent)).strip())[:80]
        except (ModelUnavailable, ValueError, KeyError, TypeError, AttributeError):
            return node
        if not summary:
            return node
        return node.model_copy(
            update={
                "summary": summary,
                "intent": intent,
                "embed_text": f"{summary} {node.embed_text}"[:4_000],
                "enriched_by": model.name,
            }
        )

    @staticmethod
    def _member_ids(node: KnowledgeNode) -> list[str]:
        return list(node.member_event_ids)

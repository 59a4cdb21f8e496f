# ruff: noqa: E501 - one scenario per line reads better than wrapped tuples
"""A generated fixture corpus of captured work: a few hundred events over three weeks, fixed clock.

Deterministic (a seeded RNG): shell sessions in three projects on two branches, agent sessions
from claude-code, codex and cursor, browser visits, workflow events and probe events. Each
scenario carries words a labelled question can find (`QUESTIONS`, for tests and the bench).
"""

from __future__ import annotations

import random
from typing import Any

NOW_MS = 1_800_000_000_000  # 2027-01-15T08:00:00Z: the fixed clock of the knowledge tests
HOUR = 3_600_000
DAY = 24 * HOUR

PROJECTS = {
    "billing": ("/home/dev/src/billing", "acme/billing"),
    "gateway": ("/home/dev/src/gateway", "acme/gateway"),
    "infra": ("/home/dev/src/infra", "acme/infra"),
}

# (project, branch, commands with exit codes, topic words), one shell session each.
SHELL_SESSIONS: list[tuple[str, str, list[tuple[str, int]]]] = [
    ("billing", "main", [("pytest tests/test_invoices.py -q", 1), ("vim src/billing/invoices.py", 0), ("pytest tests/test_invoices.py -q", 0)]),
    ("billing", "feat/stripe-webhooks", [("git checkout -b feat/stripe-webhooks", 0), ("uv add stripe", 0), ("pytest tests/test_webhooks.py", 0)]),
    ("billing", "main", [("alembic upgrade head", 1), ("psql -h db.internal -U billing", 0), ("alembic upgrade head", 0)]),
    ("gateway", "main", [("cargo build --release", 0), ("cargo clippy -- -D warnings", 1), ("cargo clippy --fix", 0)]),
    ("gateway", "fix/rate-limit", [("cargo test rate_limit", 1), ("vim src/limits.rs", 0), ("cargo test rate_limit", 0)]),
    ("gateway", "main", [("docker compose up -d redis", 0), ("curl -s http://localhost:8080/healthz", 0)]),
    ("infra", "main", [("terraform plan -out plan.tfout", 0), ("terraform apply plan.tfout", 0)]),
    ("infra", "main", [("kubectl rollout restart deployment/api", 0), ("kubectl logs deployment/api --tail 50", 0)]),
    ("infra", "feat/cdk-nag", [("npx cdk synth", 1), ("vim infra/stack.py", 0), ("npx cdk synth", 0)]),
    ("infra", "main", [("aws s3 ls s3://acme-artifacts", 0), ("aws logs tail /aws/lambda/api --since 1h", 0)]),
    ("billing", "main", [("ruff check src/billing", 1), ("ruff check --fix src/billing", 0)]),
    ("gateway", "main", [("ssh deploy@bastion.acme.io", 0), ("systemctl restart nginx", 0)]),
]  # fmt: skip

AGENT_SESSIONS: list[tuple[str, str, str, str, list[str]]] = [
    ("claude-code", "billing", "main", "Fixed the invoice rounding bug: totals now use Decimal with banker's rounding.", ["Read", "Edit", "Bash"]),
    ("codex", "gateway", "fix/rate-limit", "Reworked the token bucket rate limiter so bursts refill per second instead of per minute.", ["shell", "apply_patch"]),
    ("cursor", "infra", "feat/cdk-nag", "Added cdk-nag suppressions with reasons for the Lambda log retention findings.", ["edit_file"]),
    ("claude-code", "gateway", "main", "Investigated Redis connection timeouts under load; raised the pool size to 64.", ["Read", "Bash"]),
]  # fmt: skip

BROWSER_VISITS: list[tuple[str, str]] = [
    ("https://docs.stripe.com/webhooks/signatures", "Check webhook signatures | Stripe Documentation"),
    ("https://doc.rust-lang.org/book/ch16-00-concurrency.html", "Fearless Concurrency - The Rust Book"),
    ("https://docs.aws.amazon.com/cdk/v2/guide/home.html", "What is the AWS CDK?"),
    ("https://www.postgresql.org/docs/current/sql-altertable.html", "ALTER TABLE - PostgreSQL docs"),
]  # fmt: skip

WORKFLOW_EVENTS: list[tuple[str, str]] = [
    ("Release workflow 'nightly-billing' completed: 4 steps, artifacts published.", "completed"),
    ("Task 'migrate invoices table' failed: lock timeout on invoices.", "failed"),
]

# Labelled questions: (question, a marker every relevant node's embed_text contains). Several
# phrasings per scenario, most sharing few words with the commands, for `cairn bench knowledge`.
QUESTIONS: list[tuple[str, str]] = [
    ("how did I fix the failing invoice tests", "test_invoices"),
    ("invoice test suite was red then green", "test_invoices"),
    ("stripe webhooks branch setup", "stripe"),
    ("which payment provider library did we add", "stripe"),
    ("database migration with alembic failed", "alembic"),
    ("schema upgrade of the billing database", "alembic"),
    ("clippy warnings in the gateway", "clippy"),
    ("rust lint errors fixed automatically", "clippy"),
    ("rate limit test failure", "rate_limit"),
    ("throttling tests in the gateway broke", "rate_limit"),
    ("start redis with docker compose", "redis"),
    ("bring up the cache container locally", "redis"),
    ("terraform apply infrastructure", "terraform"),
    ("provision infrastructure changes with a saved plan", "terraform"),
    ("restart the api deployment in kubernetes", "kubectl"),
    ("look at the api pod logs after a rollout", "kubectl"),
    ("cdk synth failing", "cdk synth"),
    ("cloud assembly synthesis error in infra", "cdk synth"),
    ("list the artifacts bucket in s3", "acme-artifacts"),
    ("what is in the artifacts storage bucket", "acme-artifacts"),
    ("tail lambda logs for the api", "aws logs tail"),
    ("ruff lint errors in billing", "ruff"),
    ("python linter auto fix in the billing code", "ruff"),
    ("restart nginx on the bastion", "nginx"),
    ("ssh into the jump host", "bastion.acme.io"),
    ("invoice rounding bug", "rounding"),
    ("totals off by a cent decimal", "rounding"),
    ("token bucket rate limiter bursts", "token bucket"),
    ("refill rate per second instead of per minute", "token bucket"),
    ("cdk-nag suppressions for log retention", "cdk-nag"),
    ("nag findings on lambda logs", "cdk-nag"),
    ("redis connection timeouts pool size", "pool size"),
    ("connection pool raised under load", "pool size"),
    ("stripe webhook signature documentation", "docs.stripe.com"),
    ("how to verify webhook signatures", "docs.stripe.com"),
    ("rust concurrency book chapter", "doc.rust-lang.org"),
    ("fearless concurrency reading", "doc.rust-lang.org"),
    ("aws cdk guide", "docs.aws.amazon.com"),
    ("what is the cloud development kit", "docs.aws.amazon.com"),
    ("postgres alter table docs", "postgresql.org"),
    ("changing a column in postgresql", "postgresql.org"),
    ("nightly billing release workflow", "nightly-billing"),
    ("were artifacts published by the release", "nightly-billing"),
    ("migrate invoices table task failed", "lock timeout"),
    ("lock timeout during a migration task", "lock timeout"),
    ("psql into the billing database", "psql"),
    ("connect to the internal database host", "db.internal"),
    ("build the gateway in release mode", "cargo build --release"),
    ("edit the rate limits source file", "limits.rs"),
    ("health check of the local gateway", "healthz"),
    ("add the payment sdk dependency with uv", "uv add stripe"),
    ("create a feature branch for webhooks", "git checkout -b"),
    ("edit the cdk stack definition", "infra/stack.py"),
    ("what did the codex agent change", "token bucket"),
    ("what did cursor work on", "cdk-nag"),
]


def _shell(
    rng: random.Random, number: int, ts: int, project: str, branch: str, command: str, code: int
) -> dict[str, Any]:
    cwd, repo = PROJECTS[project]
    return {
        "id": f"sh-{number:05d}",
        "source": "shell",
        "timestamp": ts,
        "command": command,
        "exit_code": code,
        "duration_ms": rng.randint(20, 9_000),
        "cwd": cwd,
        "repo_root": cwd,
        "git_repo": repo,
        "git_branch": branch,
        "host": "laptop-1",
    }


def generate(rounds: int = 8) -> list[dict[str, Any]]:
    """The corpus, oldest first: `rounds` passes over every scenario (8 → 328 events)."""
    rng = random.Random(3)  # noqa: S311 - a reproducible fixture, not a secret
    events: list[dict[str, Any]] = []
    ts = NOW_MS - 21 * DAY
    number = 0
    for round_number in range(rounds):
        for project, branch, commands in SHELL_SESSIONS:
            ts += rng.randint(2, 5) * HOUR  # a new session: well past the 30-minute gap
            for command, code in commands:
                ts += rng.randint(10, 120) * 1000
                number += 1
                events.append(_shell(rng, number, ts, project, branch, command, code))
        for harness, project, branch, summary, tools in AGENT_SESSIONS:
            ts += rng.randint(1, 3) * HOUR
            number += 1
            cwd, repo = PROJECTS[project]
            events.append(
                {
                    "id": f"ag-{number:05d}",
                    "source": "claude",
                    "timestamp": ts,
                    "harness": harness,
                    "session_id": f"{harness}-{round_number}-{number}",
                    "summary_text": summary,
                    "message_count": rng.randint(4, 60),
                    "tool_calls": tools,
                    "cwd": cwd,
                    "repo_root": cwd,
                    "git_repo": repo,
                    "git_branch": branch,
                }
            )
        for url, title in BROWSER_VISITS:
            ts += rng.randint(1, 2) * HOUR
            number += 1
            events.append(
                {
                    "id": f"br-{number:05d}",
                    "source": "browser",
                    "timestamp": ts,
                    "url": url,
                    "title": title,
                    "dwell_ms": rng.randint(5_000, 300_000),
                    "scroll_pct": rng.randint(0, 100),
                }
            )
        for summary, status in WORKFLOW_EVENTS:
            ts += HOUR
            number += 1
            events.append(
                {
                    "id": f"wf-{number:05d}",
                    "source": "workflow",
                    "timestamp": ts,
                    "summary_text": summary,
                    "status": status,
                    "kind": "workflow",
                }
            )
        ts += HOUR
        number += 1
        events.append(
            {
                "id": f"probe-{number:05d}",
                "source": "shell",
                "timestamp": ts,
                "command": "echo hippo-probe terraform alembic",
                "exit_code": 0,
                "cwd": PROJECTS["infra"][0],
                "git_repo": PROJECTS["infra"][1],
                "git_branch": "main",
                "probe_tag": "synthetic",
            }
        )
    assert all(e["timestamp"] < NOW_MS for e in events)
    return events

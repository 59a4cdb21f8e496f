# ruff: noqa: E501 - one secret shape per line
"""Secrets in captured commands are redacted before anything is stored or indexed."""

from __future__ import annotations

from typing import Any

import boto3

from shared import runtime
from shared.config import names
from tests.functional.knowledge.conftest import Knowledge
from tests.functional.knowledge.corpus import NOW_MS

SECRETS = {
    "github token": ("git push https://ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 main", "ghp_a1B2"),
    "url password": ("git clone https://alice:hunter2secret@git.acme.io/x.git", "hunter2secret"),
    "aws secret env": ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY aws s3 ls", "wJalrXUtnFEMI"),
    "aws key id": ("aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    "bearer header": ('curl -H "Authorization: Bearer sk9f8e7d6c5b4a3210zyxw" https://api.acme.io', "sk9f8e7d6c5b4a3210zyxw"),
    "password flag": ("mysql --password=Pr0dPassw0rd! -h db", "Pr0dPassw0rd!"),
    "mysql -p": ("mysql -uroot -pS3cretRoot db", "S3cretRoot"),
    "export token": ("export GITHUB_TOKEN=gho_abcdefghijklmnopqrstuvwxyz0123456789", "gho_abcdef"),
    "pgpassword": ("PGPASSWORD=pgsecret123 psql -h db", "pgsecret123"),
    "openai key": ("OPENAI=sk-proj-abcdefghijklmnopqrstuvwxyz123456 python run.py", "sk-proj-abcdef"),
    "slack token": ("curl -d token=xoxb-1234567890-abcdefghij https://slack.com/api", "xoxb-1234567890"),
    "query token": ("curl 'https://api.acme.io/v1/items?access_token=qwertyuiop12345&x=1'", "qwertyuiop12345"),
    "cairn token": ("cairn tokens use cairn_sk_abcdefghijklmnopqrstuvwxyz012345", "cairn_sk_abcdef"),
    "jwt": ("curl -b session=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "dozjgNryP4J3jVmNHl0w5N"),
    "private key": ("echo '-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----'", "MIIEpAIBAAKCAQEA"),
}  # fmt: skip


def raw_secret_events(prefix: str) -> list[dict[str, Any]]:
    """The secret shapes as a client that does not redact would send them."""
    return [
        {
            "id": f"{prefix}{number}",
            "source": "shell",
            "timestamp": NOW_MS - 1000 * (number + 1),
            "command": command,
            "exit_code": 0,
            "cwd": "/home/dev/src/app",
        }
        for number, (command, _) in enumerate(SECRETS.values())
    ]


def test_no_known_secret_shape_is_stored_anywhere(knowledge: Knowledge) -> None:
    token = knowledge.token()
    events = raw_secret_events("s")
    totals = knowledge.ingest(token, events)
    assert totals["accepted"] == len(SECRETS)
    assert totals["redacted"] == len(SECRETS)
    table = boto3.resource("dynamodb").Table(runtime.settings().table(names.TABLE_KNOWLEDGE))
    stored = repr(table.scan()["Items"])
    assert "[REDACTED]" in stored
    leaked = [name for name, (_, secret) in SECRETS.items() if secret in stored]
    assert leaked == []
    index_files = b"".join(
        p.read_bytes() for p in runtime.settings().data_dir.rglob("*") if p.is_file()
    )
    assert [name for name, (_, secret) in SECRETS.items() if secret.encode() in index_files] == []
    shown = repr(knowledge.ok(token, "search_events", {"limit": 100}))
    assert [name for name, (_, secret) in SECRETS.items() if secret in shown] == []


def test_ordinary_commands_pass_unchanged(knowledge: Knowledge) -> None:
    token = knowledge.token()
    commands = ["git commit -m 'fix: parse tokens'", "pytest -k password_reset", "ls ~/.aws"]
    events = [
        {"id": f"o{i}", "source": "shell", "timestamp": NOW_MS - i - 1, "command": c}
        for i, c in enumerate(commands)
    ]
    assert knowledge.ingest(token, events)["redacted"] == 0
    assert {e["summary"] for e in knowledge.ok(token, "search_events", {})} == set(commands)

"""Secret redaction, applied to every captured text BEFORE it is stored or indexed.

Shell commands carry secrets: tokens pasted on the command line, passwords in URLs,
`AWS_SECRET_ACCESS_KEY=… aws s3 ls`. Nothing after ingest may hold them (not the events store,
not the knowledge nodes, not the search index, not a log line), so redaction runs in the
ingest path on the way in, and the capture CLI runs the same function before a command leaves
the machine. Patterns favour false positives: a redacted non-secret costs a little recall, a
stored secret costs a rotation.
"""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"

# Variable names whose values are secrets (`export GITHUB_TOKEN=…`, `PGPASSWORD=… psql`).
_SECRET_NAME = (
    r"[A-Za-z_]*(?:SECRET|TOKEN|PASSWORD|PASSWD|PASS|PWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY"
    r"|CREDENTIALS?|AUTH)[A-Za-z0-9_]*"
)

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # PEM private keys, whole block.
    (
        re.compile(
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
            re.DOTALL,
        ),
        REDACTED,
    ),
    # Authorization headers: `-H "Authorization: Bearer …"`, `Basic …`, `token …`.
    (
        re.compile(
            r"(\bAuthorization\s*:\s*(?:Bearer|Basic|token|Token)\s+)[^\s\"']+", re.IGNORECASE
        ),
        rf"\1{REDACTED}",
    ),
    (re.compile(r"(\bBearer\s+)[A-Za-z0-9._~+/=-]{16,}"), rf"\1{REDACTED}"),
    # NAME=value and NAME: value for secret-looking names (quoted or not).
    (
        re.compile(rf"(\b{_SECRET_NAME}\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s&;|]+)", re.IGNORECASE),
        rf"\1{REDACTED}",
    ),
    # Passwords in URLs: scheme://user:password@host.
    (
        re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@]*:)([^@\s/]+)(@)", re.IGNORECASE),
        rf"\1{REDACTED}\3",
    ),
    # Secret-looking query parameters.
    (
        re.compile(
            r"([?&](?:access_token|token|api_key|apikey|key|secret|password|sig|signature|auth)=)"
            r"[^&\s#]+",
            re.IGNORECASE,
        ),
        rf"\1{REDACTED}",
    ),
    # Command-line password flags: --password x, --password=x, --token x, -p'x' (mysql).
    (
        re.compile(
            r"(--(?:password|passwd|token|secret|api-key|apikey|access-key|secret-key|auth-token)"
            r"(?:=|\s+))(\"[^\"]*\"|'[^']*'|\S+)",
            re.IGNORECASE,
        ),
        rf"\1{REDACTED}",
    ),
    (re.compile(r"(\bmysql\b[^\n|;]*?\s-p)(\S+)"), rf"\1{REDACTED}"),
    # Well-known token shapes, wherever they appear.
    (re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}\b"), REDACTED),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"), REDACTED),
    (re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b"), REDACTED),
    (re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"), REDACTED),
    (re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}\b"), REDACTED),
    (re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b"), REDACTED),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), REDACTED),
    (re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), REDACTED),
    (re.compile(r"\bcairn_sk_[A-Za-z0-9_-]{16,}"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), REDACTED),
)


def redact(text: str) -> str:
    """`text` with every secret shape replaced by `[REDACTED]`.

    >>> redact("AWS_SECRET_ACCESS_KEY=abc123 aws s3 ls")
    'AWS_SECRET_ACCESS_KEY=[REDACTED] aws s3 ls'
    >>> redact("git clone https://bob:hunter2@example.com/x.git")
    'git clone https://bob:[REDACTED]@example.com/x.git'
    """
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text

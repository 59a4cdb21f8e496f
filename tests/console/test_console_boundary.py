"""The console is a client of the tool layer: it imports the gateway and nothing of a domain,
a store or AWS, so every read and action it makes is a tools/call."""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_import_graph import imported_modules

CONSOLE = Path(__file__).resolve().parents[2] / "shared" / "console"
# The gateway, and the routes' way to run a blocking call (transport, no domain or store).
ALLOWED_SHARED = ("shared.console", "shared.protocol.gateway", "shared.protocol.blocking")


def test_the_console_reaches_cairn_only_through_the_gateway() -> None:
    modules = sorted(CONSOLE.glob("*.py"))
    assert {p.name for p in modules} >= {"client.py", "routes.py", "views.py"}

    reached = {
        f"{path.name}: {name}"
        for path in modules
        for name in imported_modules(path)
        if (name.startswith("shared.") and not name.startswith(ALLOWED_SHARED))
        or name.split(".")[0] in {"boto3", "botocore", "sqlite3"}
    }

    assert reached == set()


def test_the_scope_each_refusal_names_is_the_tools_own() -> None:
    from shared.app.groups import load_catalog
    from shared.console.views import TOOL_SCOPES

    scopes = {entry.name: entry.scopes for entry in load_catalog()}

    # The one line a reader gets instead of a control names a scope that allows the tool.
    assert {tool: scope in scopes[tool] for tool, scope in TOOL_SCOPES.items()} == dict.fromkeys(
        TOOL_SCOPES, True
    )

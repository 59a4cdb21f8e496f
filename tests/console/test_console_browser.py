"""The console in a real headless Chromium (Debian's `chromium` + `chromium-driver`, Selenium)
against a real `cairn serve`, with agents on the other side using the official MCP SDK client.

One browser and one server for the whole module, the flows in order: sign in by keyboard,
approve a proposal (then the agent recalls it over MCP), resolve a conflict, and a team B
session that sees nothing of team A. Each page is screenshotted into tests-output/screenshots
(CI keeps the folder) and checked for accessibility basics: every field labelled, text
contrast at least 4.5:1, a visible keyboard focus.

Without chromium these tests skip, saying why, except under CI (`CI=1`, `true` or `yes`: see
tests/ci.py), where they fail: CI installs chromium (.ci/run, `make test`'s bootstrap), so a
missing browser there is a broken setup.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.ci import skip_unless_ci
from tests.console.conftest import HANDOFF
from tests.protocol.conftest import LocalServer, start_server, stop_server

pytestmark = pytest.mark.protocol

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "tests-output" / "screenshots"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def _major(command: str) -> str | None:
    """The major version `command --version` prints (`Chromium 150.0…` → `150`)."""
    try:
        done = subprocess.run(
            [command, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError:
        return None
    found = re.search(r"(\d+)\.\d+\.\d+", done.stdout)
    return found.group(1) if found else None


def _browser_or_skip() -> None:
    missing = [p for p in (CHROMIUM, DRIVER) if not Path(p).exists()]
    if not missing:
        browser, driver = _major(CHROMIUM), _major(DRIVER)
        if browser is not None and browser == driver:
            return
        # A driver of another browser build (a CI image's Chrome driver beside its Chromium).
        missing = [f"a chromedriver matching chromium {browser} (found {driver})"]
    reason = (
        f"{' and '.join(missing)} not found: install Debian's browser with "
        "`apt-get install -y chromium chromium-driver`"
    )
    skip_unless_ci("browser tests", reason)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    _browser_or_skip()
    running = start_server(tmp_path_factory.mktemp("console-data"))
    yield running
    stop_server(running)


@pytest.fixture(scope="module")
def browser(server: LocalServer) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",  # root in CI containers
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-proxy-server",
        "--window-size=1100,900",
        "--force-device-scale-factor=1",
    ):
        options.add_argument(argument)
    # The console log, to see the Content-Security-Policy violations the browser reports.
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit driver path: Selenium Manager never downloads a browser or a driver.
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    driver.implicitly_wait(0)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    yield driver
    driver.quit()


def console_url(server: LocalServer, page: str = "") -> str:
    return f"http://127.0.0.1:{server.port}/console/{page}"


def shot(browser: Any, name: str) -> None:
    browser.save_screenshot(str(SCREENSHOTS / f"{name}.png"))


def wait_for(condition: Callable[[], Any], seconds: float = 30, every: float = 0.3) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {seconds} s: {condition}")
        time.sleep(every)


def open_page(browser: Any, url: str) -> str:
    """Load `url` and return its HTML once its heading is there (never an empty document)."""
    browser.get(url)
    wait_for(lambda: browser.find_elements("css selector", "main h1"), seconds=15)
    source: str = browser.page_source
    assert "</main>" in source
    return source


def sdk_call(server: LocalServer, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    """One tool call through the official MCP Python SDK client, as an agent makes it."""
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def main() -> Any:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(server.url, http_client=http)) as client:
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, result.content
            return result.structured_content

    return anyio.run(main)


# -- accessibility basics ------------------------------------------------------------------

UNLABELLED_FIELDS = """
return Array.from(document.querySelectorAll('input, select, textarea'))
  .filter(e => e.type !== 'hidden')
  .filter(e => !(e.id && document.querySelector('label[for="' + e.id + '"]'))
               && !e.closest('label') && !e.getAttribute('aria-label'))
  .map(e => e.outerHTML);
"""

# WCAG 2.x contrast of every element that shows text, against the first opaque background
# behind it.
LOW_CONTRAST = """
function rgb(s) { const m = s.match(/[\\d.]+/g).map(Number);
  return m.length > 3 ? m : m.concat([1]); }
function lum(c) { const v = c.slice(0, 3).map(x => { x /= 255;
  return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); });
  return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; }
function background(e) { for (; e; e = e.parentElement) {
  const c = rgb(getComputedStyle(e).backgroundColor); if (c[3] > 0.5) return c; }
  return [255, 255, 255, 1]; }
const bad = [];
for (const e of document.querySelectorAll('body *')) {
  const own = Array.from(e.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
  if (!own || !e.getClientRects().length) continue;
  const style = getComputedStyle(e);
  if (style.visibility === 'hidden') continue;
  const a = lum(rgb(style.color)), b = lum(background(e));
  const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  if (ratio < 4.5)
    bad.push(e.tagName + ' ' + ratio.toFixed(2) + ': ' + e.textContent.trim().slice(0, 40));
}
return bad;
"""


def write_memory(server: LocalServer, token: str, content: str, **fields: Any) -> str:
    """The id of a memory written with `content` and `fields` through the SDK."""
    memory_id: str = sdk_call(server, token, "memory_write", {"content": content, **fields})[
        "memory"
    ]["id"]
    return memory_id


def csp_violations(browser: Any) -> list[str]:
    """The Content-Security-Policy violations the browser logged since the last call."""
    return [
        entry["message"]
        for entry in browser.get_log("browser")
        if "Content Security Policy" in entry["message"]
    ]


def check_accessibility(browser: Any) -> None:
    # Every page checked here also ran under the strict CSP without the browser refusing any
    # of its own scripts, styles or images (an inline one would be refused, and logged).
    assert csp_violations(browser) == []
    assert browser.execute_script(UNLABELLED_FIELDS) == []
    assert browser.execute_script(LOW_CONTRAST) == []
    assert browser.find_element("css selector", "html").get_attribute("lang") == "en"
    assert browser.find_elements("css selector", "h1")


# -- the flows -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def team_a(server: LocalServer) -> dict[str, str]:
    team = f"alpha-{uuid.uuid4().hex[:6]}"
    return {
        "team": team,
        # A person who reviews memory and watches the work (the work view's read scopes).
        "reviewer": server.create_token(
            team,
            "memory,memory.review,search,handoff,task.read,workflow.read,cost.read,sync",
            "reviewer",
        ),
        "agent": server.create_token(team, "memory", "agent", "--agent", "agent-7"),
        "worker": server.create_token(
            team,
            "handoff,task.create,task.claim,workflow.create,workflow.manage,cost.write",
            "worker",
            "--agent",
            "builder-1",
        ),
    }


def test_sign_in_by_keyboard_keeps_the_token_away_from_scripts(
    browser: Any, server: LocalServer, team_a: dict[str, str]
) -> None:
    from selenium.webdriver.common.keys import Keys

    # The URL `cairn serve` printed, as a person would open it.
    assert server.log is not None
    printed = re.search(r"console: (\S+)", server.log.read_text())
    assert printed, server.log.read_text()
    assert printed.group(1) == console_url(server)
    browser.get(printed.group(1))
    wait_for(lambda: browser.current_url.endswith("/console/login"))
    check_accessibility(browser)
    shot(browser, "01-sign-in")

    # Keyboard only: the token field has the focus, Enter submits.
    focused = browser.switch_to.active_element
    assert focused.get_attribute("id") == "token"
    focused.send_keys(team_a["reviewer"], Keys.ENTER)

    wait_for(lambda: browser.current_url.endswith("/console/review"))
    assert browser.find_element("css selector", "h1").text == "Review queue"
    cookie = browser.get_cookie("cairn_console")
    assert cookie is not None
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"
    assert team_a["reviewer"] not in browser.execute_script("return document.cookie")
    # The CSP is in force in the browser: a script injected inline does not run.
    check_accessibility(browser)
    browser.execute_script(
        "const s = document.createElement('script');"
        "s.textContent = 'window.injected = true'; document.body.appendChild(s);"
    )
    assert browser.execute_script("return window.injected === true") is False
    assert any("script-src 'self'" in v for v in csp_violations(browser))
    # Tab from the page start: the skip link, then the navigation, each with a visible focus.
    browser.find_element("css selector", "body").send_keys(Keys.TAB)
    skip = browser.switch_to.active_element
    assert skip.text == "Skip to content"
    assert skip.value_of_css_property("outline-style") != "none"
    check_accessibility(browser)


def test_approving_a_proposal_makes_it_recallable_over_mcp(
    browser: Any, server: LocalServer, team_a: dict[str, str]
) -> None:
    content = f"Release branches are cut on Wednesdays ({uuid.uuid4().hex[:6]})."
    proposal = sdk_call(
        server,
        team_a["agent"],
        "memory_propose",
        {
            "content": content,
            "subject": "release cadence",
            "sources": [{"type": "task", "ref": "task-12"}],
        },
    )["memory"]["id"]
    assert sdk_call(server, team_a["agent"], "recall", {"query": content})["memories"] == []

    browser.get(console_url(server, "review"))
    card = browser.find_element("id", f"proposal-{proposal}")
    assert content in card.text
    assert "agent-7" in card.text
    assert "task: task-12" in card.text
    check_accessibility(browser)
    shot(browser, "02-review-queue")
    # By keyboard: type the note, Tab to Approve (its focus visible), Enter.
    from selenium.webdriver.common.keys import Keys

    card.find_element("id", f"note-{proposal}").send_keys("checked against the calendar", Keys.TAB)
    approve = browser.switch_to.active_element
    assert approve.get_attribute("value") == "approve"
    assert approve.value_of_css_property("outline-style") != "none"
    approve.send_keys(Keys.ENTER)

    notice = wait_for(lambda: browser.find_elements("css selector", ".notice"))
    assert "Approved" in notice[0].text
    recalled = sdk_call(server, team_a["agent"], "recall", {"query": "release branches"})
    assert content in [m["body"] for m in recalled["memories"]]
    history = sdk_call(server, team_a["reviewer"], "memory_get", {"id": proposal})["memory"][
        "history"
    ]
    assert history[-1]["note"] == "checked against the calendar"
    shot(browser, "03-approved")


def test_resolving_a_conflict_keeps_the_chosen_memory(
    browser: Any, server: LocalServer, team_a: dict[str, str]
) -> None:
    subject = f"deploy freeze {uuid.uuid4().hex[:6]}"
    keep = write_memory(
        server, team_a["agent"], "Production deploys are frozen on Fridays.", subject=subject
    )
    lose = write_memory(
        server, team_a["agent"], "Production deploys are not frozen on Fridays.", subject=subject
    )

    def conflict_card() -> Any:
        browser.get(console_url(server, "review?section=conflicts"))
        cards = [
            c
            for c in browser.find_elements("css selector", "[id^=conflict-]")
            if keep in c.get_attribute("innerHTML")
        ]
        return cards[0] if cards else None

    card = wait_for(conflict_card, seconds=60, every=1)  # the curator's worker finds it
    card.location_once_scrolled_into_view  # noqa: B018 (scrolls the card into the shot)
    shot(browser, "04-conflict")
    card.find_element(
        "xpath", f'.//form[input[@name="keep_id"][@value="{keep}"]]//button[@value="keep"]'
    ).click()

    wait_for(lambda: "Conflict resolved" in browser.page_source)
    loser = sdk_call(server, team_a["reviewer"], "memory_get", {"id": lose})["memory"]
    assert loser["status"] == "superseded"
    assert loser["superseded_by"] == keep
    assert "Version chain" in open_page(browser, console_url(server, f"memory?id={lose}"))
    check_accessibility(browser)
    shot(browser, "05-version-chain")


def test_memory_browser_and_work_view_render_accessibly(
    browser: Any, server: LocalServer, team_a: dict[str, str]
) -> None:
    page = open_page(browser, console_url(server, "memories?q=deploys"))
    assert "Production deploys are frozen on Fridays." in page
    check_accessibility(browser)
    shot(browser, "06-memories")
    worker = team_a["worker"]
    handoff = "# Billing cron\n\n" + HANDOFF
    sdk_call(
        server, worker, "store_handoff", {"title": "Billing cron migration", "document_md": handoff}
    )
    task_id = sdk_call(server, worker, "task.create", {"name": "compile the docs"})["id"]
    sdk_call(server, worker, "task.claim", {"task_id": task_id})
    flow = sdk_call(
        server,
        worker,
        "workflow.create",
        {
            "name": "blog post",
            "definition": {"steps": [{"name": "draft"}, {"name": "edit", "depends_on": ["draft"]}]},
        },
    )
    sdk_call(server, worker, "workflow.start", {"workflow_id": flow["workflow"]["id"]})
    sdk_call(
        server,
        worker,
        "cost.report",
        {
            "agent_id": "builder-1",
            "model": "opus",
            "provider": "anthropic",
            "estimated_cost_usd": 2.5,
        },
    )

    work = open_page(browser, console_url(server, "work"))
    assert browser.find_element("css selector", "h1").text == "Work"
    assert "may not call" not in work
    claimed = browser.find_element("xpath", "//h3[starts-with(., 'claimed')]/following::table[1]")
    assert "compile the docs" in claimed.text
    assert "builder-1" in claimed.text  # the holder (and its lease beside it)
    assert "Billing cron migration" in work
    steps = [e.text for e in browser.find_elements("css selector", ".timeline .step strong")]
    assert steps[:2] == ["draft", "edit"]
    assert "$2.50 spent" in browser.find_element("id", "cost-text").text
    check_accessibility(browser)
    shot(browser, "07-work")


def test_the_sync_view_lists_the_teams_connectors_accessibly(
    browser: Any, server: LocalServer, team_a: dict[str, str], tmp_path: Path
) -> None:
    from tests.functional.sync.conftest import guide_repo

    repo = guide_repo(tmp_path / "handbook")
    team = team_a["team"]
    server.cli("connectors", "add", "handbook", "--kind", "git", "--url", repo.url, "--team", team)
    synced = sdk_call(server, team_a["reviewer"], "sync", {"source": "handbook"})
    assert synced["connectors"][0]["success"], synced

    page = open_page(browser, console_url(server, "sync"))

    assert browser.find_element("css selector", "h1").text == "Sync"
    row = browser.find_element("xpath", "//tr[td[@data-label='Name'][.='handbook']]")
    assert "git" in row.text
    assert "seen 1" in row.text
    assert repo.url not in page  # the view shows status, never a connector's settings
    check_accessibility(browser)
    shot(browser, "08-sync")
    repo.close()


# Pairs of text boxes (each text node's line boxes) that overlap by more than a pixel each way,
# and whether the page is wider than the window (text pushed out of sight).
OVERLAPS = """
const boxes = [];
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
for (let n = walker.nextNode(); n; n = walker.nextNode()) {
  const e = n.parentElement;
  // Not shown: a closed <details>' body still has boxes, where the page goes on.
  if (!n.textContent.trim() || !e.checkVisibility({visibilityProperty: true})) continue;
  const range = document.createRange(); range.selectNodeContents(n);
  for (const r of range.getClientRects())
    if (r.width > 1 && r.height > 1 && r.right > 0 && r.bottom > 0)
      boxes.push([r.left, r.top, r.right, r.bottom, n.textContent.trim().slice(0, 30)]);
}
const bad = [];
for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
  const a = boxes[i], b = boxes[j];
  const w = Math.min(a[2], b[2]) - Math.max(a[0], b[0]);
  const h = Math.min(a[3], b[3]) - Math.max(a[1], b[1]);
  if (w > 1 && h > 1) bad.push(a[4] + ' / ' + b[4]);
}
const wide = document.documentElement.scrollWidth > window.innerWidth + 1;
return {overlaps: bad.slice(0, 10), wider: wide};
"""


def test_no_text_overlaps_from_375_px_to_wide(
    browser: Any, server: LocalServer, team_a: dict[str, str]
) -> None:
    # Two proposals (the first test approved its own), so the queue has items to lay out.
    for n in (1, 2):
        sdk_call(
            server,
            team_a["agent"],
            "memory_propose",
            {
                "content": f"Proposal {n}: hotfix branches come off the last release tag.",
                "subject": "release cadence",
                "tags": ["release", "process"],
                "sources": [{"type": "task", "ref": f"task-{n}"}],
            },
        )
    # Two conflicting claims side by side, with a word longer than their column (a URL): it
    # ran over the other card at 700 px before the layout let long words wrap.
    url = "https://wiki.example.com/engineering/runbooks/deploy-freeze-calendar-2026-q4-final-v2"
    for claim in ("freeze", "do not freeze"):
        write_memory(
            server,
            team_a["agent"],
            f"Deploys {claim} on Fridays, see {url}",
            subject="freeze-calendar",
        )

    def conflict_listed() -> bool:
        return url in open_page(browser, console_url(server, "review?section=conflicts"))

    wait_for(conflict_listed, seconds=60, every=1)  # the curator's worker finds it
    pages = ("review?section=proposals", "review?section=conflicts", "memories", "work", "sync")
    try:
        for width in (375, 700, 1280):
            browser.set_window_size(width, 900)
            for page in pages:
                open_page(browser, console_url(server, page))
                found = browser.execute_script(OVERLAPS)
                assert found == {"overlaps": [], "wider": False}, (width, page, found)
            shot(browser, f"09-layout-{width}")
    finally:
        browser.set_window_size(1100, 900)


def test_team_b_sees_nothing_of_team_a(
    browser: Any, server: LocalServer, team_a: dict[str, str]
) -> None:
    browser.get(console_url(server, "review"))
    browser.find_element("css selector", "form.signout button").click()
    wait_for(lambda: "/console/login" in browser.current_url)
    assert browser.get_cookie("cairn_console") is None
    team_b = server.create_token(f"beta-{uuid.uuid4().hex[:6]}", "memory,memory.review", "b")
    browser.find_element("id", "token").send_keys(team_b)
    browser.find_element("css selector", "form button[type=submit]").click()
    wait_for(lambda: browser.current_url.endswith("/console/review"))

    pages = []
    for page in ("review", "memories?status=active&status=proposed&status=superseded", "work"):
        pages.append(open_page(browser, console_url(server, page)))
    shot(browser, "08-team-b")

    for words in ("Release branches", "Production deploys", "agent-7"):
        assert not any(words in page for page in pages), words

"""The console's sign-in, review queue and memory browser, in-process on moto.

Every action is checked through the tools afterwards (memory_get, memory_query, recall), which
is also how an MCP client would see it.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from shared.console import views
from shared.memory.wiring import build_detection_queue
from tests.console.conftest import Console
from tests.functional.conftest import Harness, ok


def propose(harness: Harness, token: str, content: str, **fields: Any) -> str:
    memory = ok(harness, token, "memory_propose", {"content": content, **fields})["memory"]
    memory_id: str = memory["id"]
    return memory_id


def write(harness: Harness, token: str, content: str, **fields: Any) -> str:
    memory = ok(harness, token, "memory_write", {"content": content, **fields})["memory"]
    memory_id: str = memory["id"]
    return memory_id


def write_flagged(harness: Harness, token: str, content: str, *, reason: str) -> str:
    memory_id = write(harness, token, content)
    ok(harness, token, "flag_memory", {"memory_id": memory_id, "reason": reason})
    return memory_id


def status_of(harness: Harness, token: str, memory_id: str) -> str:
    memory = ok(harness, token, "memory_get", {"id": memory_id})["memory"]
    return str(memory.get("status", "filed"))


def drain() -> None:
    detection = build_detection_queue()
    assert detection is not None
    detection.drain()


# -- sign-in -------------------------------------------------------------------------------


def test_signing_in_keeps_the_token_in_an_httponly_strict_cookie(console: Console) -> None:
    secret = console.harness.token()

    reply = console.sign_in(secret)

    assert reply.status_code == 303
    assert reply.headers["location"] == "review"
    cookie = reply.headers["set-cookie"]
    assert cookie.startswith(f"cairn_console={secret};")
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "Path=/console" in cookie
    assert "Secure" not in cookie  # plain HTTP on loopback: a Secure cookie would never return
    assert console.client.get("/console/review").status_code == 200


def test_behind_https_the_cookies_are_secure(console: Console) -> None:
    https = Console(TestClient(console.client.app, base_url="https://testserver"), console.harness)

    reply = https.sign_in(console.harness.token())

    assert reply.status_code == 303
    assert "Secure" in reply.headers["set-cookie"]
    assert "Secure" in https.client.get("/console/login").headers["set-cookie"]


def test_a_wrong_token_is_refused_and_sets_no_session(console: Console) -> None:
    reply = console.sign_in("cairn_sk_" + "0" * 43)

    assert reply.status_code == 401
    assert "not accepted" in reply.text
    assert "cairn_console=" not in reply.headers.get("set-cookie", "")
    assert console.client.get("/console/review", follow_redirects=False).headers["location"] == (
        "login"
    )


def test_sign_in_without_the_forms_nonce_is_refused(console: Console) -> None:
    secret = console.harness.token()
    console.client.get("/console/login")

    forged = console.post("/console/login", {"token": secret, "csrf": "guessed"})

    assert forged.status_code == 403
    assert "cairn_console=" not in forged.headers.get("set-cookie", "")


def test_pages_carry_a_strict_content_security_policy(console: Console) -> None:
    console.sign_in(console.harness.token())

    for path in ("/console/login", "/console/review", "/console/memories", "/console/work"):
        headers = console.client.get(path).headers
        csp = headers["content-security-policy"]
        assert "default-src 'none'" in csp
        assert "script-src 'self'" in csp
        assert "unsafe-inline" not in csp
        assert "frame-ancestors 'none'" in csp
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["cache-control"] == "no-store"


def test_a_revoked_token_ends_the_session(console: Console) -> None:
    secret = console.harness.token()
    console.sign_in(secret)
    token_id = console.harness.tokens.authenticate(secret)[0].token_id
    console.harness.tokens.revoke(token_id)

    reply = console.client.get("/console/review", follow_redirects=False)

    assert reply.status_code == 303
    assert reply.headers["location"] == "login?expired=1"
    assert 'cairn_console=""' in reply.headers["set-cookie"]


def test_signing_out_needs_the_csrf_token_and_clears_the_cookie(console: Console) -> None:
    console.sign_in(console.harness.token())

    assert console.post("/console/logout", {}).status_code == 403
    reply = console.post("/console/logout", {"csrf": console.csrf()})

    assert reply.status_code == 303
    assert 'cairn_console=""' in reply.headers["set-cookie"]


# -- review queue --------------------------------------------------------------------------


def test_approving_a_proposal_makes_it_recallable_with_the_note_in_its_history(
    console: Console,
) -> None:
    harness = console.harness
    agent = harness.token(scopes=("memory",), agent_id="agent-7")
    reviewer = harness.token(scopes=("memory", "memory.review"))
    proposal = propose(
        harness,
        agent,
        "Release branches are cut on Wednesdays.",
        subject="release cadence",
        sources=[{"type": "task", "ref": "task-12"}],
    )
    assert ok(harness, reviewer, "recall", {"query": "release branches"})["memories"] == []
    console.sign_in(reviewer)
    page = console.client.get("/console/review").text
    assert "Release branches are cut on Wednesdays." in page
    assert "agent-7" in page
    assert "task: task-12" in page  # provenance
    assert re.search(r"<strong>\w+</strong> by agent-7 → proposed", page)  # who did what
    assert f'href="memory?id={proposal}"' in page  # its versions

    reply = console.post(
        "/console/review-proposals",
        {"csrf": console.csrf(), "id": proposal, "decision": "approve", "note": "checked"},
    )

    assert reply.status_code == 303
    assert reply.headers["location"] == "review?done=approved"
    assert status_of(harness, reviewer, proposal) in {"filed", "pending"}
    memory = ok(harness, reviewer, "memory_get", {"id": proposal})["memory"]
    assert any(e.get("note") == "checked" for e in memory["history"])
    recalled = ok(harness, agent, "recall", {"query": "release branches"})["memories"]
    assert [m["body"] for m in recalled] == ["Release branches are cut on Wednesdays."]
    assert "No proposals are waiting." in console.client.get("/console/review").text
    chain = console.client.get(f"/console/memory?id={proposal}").text
    # The reviewer, a token bound to no agent, by the token's name with its id on hover.
    assert re.search(
        r'by <span class="actor" title="token:tok_\w+">t</span> → (filed|pending): “checked”', chain
    )


def test_rejecting_a_proposal_keeps_it_out_of_recall(console: Console) -> None:
    harness = console.harness
    reviewer = harness.token()
    proposal = propose(harness, harness.token(scopes=("memory",)), "The VPN is optional.")
    console.sign_in(reviewer)

    console.post(
        "/console/review-proposals",
        {"csrf": console.csrf(), "id": proposal, "decision": "reject", "note": "it is not"},
    )

    assert status_of(harness, reviewer, proposal) == "rejected"
    assert ok(harness, reviewer, "recall", {"query": "VPN optional"})["memories"] == []


def test_a_post_without_the_csrf_token_changes_nothing(console: Console) -> None:
    harness = console.harness
    reviewer = harness.token()
    proposal = propose(harness, reviewer, "Lunch is at noon.")
    console.sign_in(reviewer)

    missing = console.post("/console/review-proposals", {"id": proposal, "decision": "approve"})
    wrong = console.post(
        "/console/review-proposals", {"csrf": "0" * 64, "id": proposal, "decision": "approve"}
    )

    assert missing.status_code == 403
    assert wrong.status_code == 403
    assert "CSRF" in missing.text
    assert status_of(harness, reviewer, proposal) == "proposed"


def test_a_cross_site_post_is_refused_even_with_the_token(console: Console) -> None:
    harness = console.harness
    reviewer = harness.token()
    proposal = propose(harness, reviewer, "Lunch is at one.")
    console.sign_in(reviewer)
    form = {"csrf": console.csrf(), "id": proposal, "decision": "approve"}

    by_origin = console.post("/console/review-proposals", form, origin="https://evil.example")
    by_fetch = console.post("/console/review-proposals", form, **{"sec-fetch-site": "cross-site"})

    assert by_origin.status_code == 403
    assert by_fetch.status_code == 403
    assert status_of(harness, reviewer, proposal) == "proposed"


def test_a_token_without_memory_review_sees_the_queue_read_only(console: Console) -> None:
    harness = console.harness
    author = harness.token(scopes=("memory",), agent_id="writer")
    proposal = propose(harness, author, "Staging resets every night.")
    console.sign_in(author)

    page = console.client.get("/console/review").text
    forced = console.post(
        "/console/review-proposals", {"csrf": console.csrf(), "id": proposal, "decision": "approve"}
    )

    assert "Staging resets every night." in page  # its author sees the proposal
    assert "Approving or rejecting a proposal needs the memory.review scope" in page
    assert 'value="approve"' not in page
    assert forced.status_code == 403
    assert "memory.review" in forced.text
    assert status_of(harness, author, proposal) == "proposed"


@pytest.mark.parametrize(
    ("scopes", "decides", "curates"),
    [
        (("memory.read",), False, False),
        (("memory",), False, True),
        (("memory", "memory.review"), True, True),
    ],
)
def test_every_reader_sees_the_open_proposals_and_only_the_controls_it_may_use(
    console: Console, scopes: tuple[str, ...], decides: bool, curates: bool
) -> None:
    harness = console.harness
    author = harness.token(scopes=("memory",), agent_id="writer")
    proposals = [propose(harness, author, f"Proposal {n}: the VPN is optional.") for n in (1, 2)]
    admin = harness.token()
    flagged = write_flagged(harness, admin, "The office closes at 15:00.", reason="it is 18:00")
    console.sign_in(harness.token(scopes=scopes))

    page = console.client.get("/console/review?section=proposals").text
    flags = console.client.get("/console/review?section=flagged").text
    chain = console.client.get(f"/console/memory?id={flagged}").text

    assert set(cards(page, "proposal")) == set(proposals)  # listed to every reader
    assert '<span class="count">2</span>' in page
    assert "No proposals are waiting." not in page
    refused = "Approving or rejecting a proposal needs the memory.review scope"
    assert ('value="approve"' in page) is decides
    assert (refused in page) is not decides
    assert cards(flags, "flagged") == [flagged]
    assert ('action="retract"' in flags) is curates
    assert ("Retracting or correcting a flagged memory needs the memory.write scope" in flags) is (
        not curates
    )
    assert ('action="supersede"' in chain) is curates
    assert ("Writing a new version needs the memory.write scope" in chain) is (not curates)


def test_a_conflict_is_resolved_by_keeping_one(console: Console) -> None:
    harness = console.harness
    token = harness.token()
    keep = write(harness, token, "Production deploys are frozen on Fridays.", subject="freeze")
    lose = write(harness, token, "Production deploys are not frozen on Fridays.", subject="freeze")
    drain()
    finding = ok(harness, token, "conflicts_list", {})["items"][0]["finding"]["id"]
    console.sign_in(token)
    assert f'id="conflict-{finding}"' in console.client.get("/console/review").text

    reply = console.post(
        "/console/resolve-conflict",
        {"csrf": console.csrf(), "id": finding, "action": "keep", "keep_id": keep, "note": "ops"},
    )

    assert reply.headers["location"] == "review?done=conflict"
    assert status_of(harness, token, lose) == "superseded"
    assert ok(harness, token, "conflicts_list", {})["items"] == []


def test_a_bad_resolution_shows_the_tools_message_and_changes_nothing(console: Console) -> None:
    harness = console.harness
    token = harness.token()
    for content in ("Builds use Node 18.", "Builds use Node 20."):
        write(harness, token, content, subject="node version")
    drain()
    finding = ok(harness, token, "conflicts_list", {})["items"][0]["finding"]["id"]
    console.sign_in(token)

    reply = console.post(
        "/console/resolve-conflict", {"csrf": console.csrf(), "id": finding, "action": "keep"}
    )

    merge = console.post(
        "/console/resolve-conflict", {"csrf": console.csrf(), "id": finding, "action": "merge"}
    )

    assert reply.status_code == 400
    assert "keep_id" in reply.text
    assert merge.status_code == 400
    assert "content" in merge.text
    assert len(ok(harness, token, "conflicts_list", {})["items"]) == 1


def test_a_duplicate_cluster_is_merged(console: Console) -> None:
    harness = console.harness
    token = harness.token()
    first = ok(harness, token, "memory_write", {"content": "Backups run nightly at 02:00 UTC."})
    write(harness, token, "Backups run nightly at 02:00 UTC.")
    drain()
    cluster = ok(harness, token, "duplicates_list", {})["items"][0]["finding"]["id"]
    console.sign_in(token)
    assert f'id="duplicate-{cluster}"' in console.client.get("/console/review").text

    console.post(
        "/console/resolve-duplicate", {"csrf": console.csrf(), "id": cluster, "action": "merge"}
    )

    ids = [m["id"] for m in ok(harness, token, "memory_query", {})["memories"]]
    assert ids == [first["memory"]["id"]]
    assert ok(harness, token, "duplicates_list", {})["items"] == []


def test_a_flagged_memory_is_listed_and_retracted(console: Console) -> None:
    harness = console.harness
    token = harness.token()
    memory_id = write_flagged(harness, token, "The office closes at 15:00.", reason="it is 18:00")
    console.sign_in(token)
    page = console.client.get("/console/review").text
    assert f'id="flagged-{memory_id}"' in page
    assert "it is 18:00" in page

    console.post("/console/retract", {"csrf": console.csrf(), "id": memory_id, "reason": "wrong"})

    assert status_of(harness, token, memory_id) == "retracted"
    assert (
        "No active memory is flagged." in console.client.get("/console/review?section=flagged").text
    )


# -- team isolation ------------------------------------------------------------------------


def test_team_b_sees_nothing_of_team_a(console: Console, other_console: Console) -> None:
    harness = console.harness
    alpha = harness.token(team="alpha")
    secret_id = propose(harness, alpha, "Alpha's launch code word is heron.")
    shipped = write(harness, alpha, "Alpha ships on Thursdays.", subject="ship")
    write(harness, alpha, "Alpha ships on Fridays.", subject="ship")
    drain()
    conflict = ok(harness, alpha, "conflicts_list", {})["items"][0]["finding"]["id"]
    other_console.sign_in(harness.token(team="beta"))

    pages = [
        other_console.client.get(path).text
        for path in (
            "/console/review",
            "/console/memories",
            "/console/memories?q=heron&status=proposed&status=active",
            f"/console/memory?id={secret_id}",
        )
    ]
    forced = other_console.post(
        "/console/review-proposals",
        {"csrf": other_console.csrf(), "id": secret_id, "decision": "approve"},
    )

    csrf = other_console.csrf()
    forged = {
        path: other_console.post(path, {"csrf": csrf, **form})
        for path, form in (
            ("/console/retract", {"id": shipped, "reason": "team B says so"}),
            ("/console/supersede", {"id": shipped, "content": "Alpha ships on Mondays."}),
            ("/console/resolve-conflict", {"id": conflict, "action": "both_valid"}),
        )
    }

    # (the search box echoes "heron" back: the memories' own words must not appear)
    assert not any("launch code" in page or "Alpha ships" in page for page in pages)
    assert not any(conflict in page for page in pages)
    assert forced.status_code == 409  # not decided: to team B the id does not exist
    assert status_of(harness, alpha, secret_id) == "proposed"
    assert {path: reply.status_code for path, reply in forged.items()} == dict.fromkeys(forged, 404)
    assert status_of(harness, alpha, shipped) in {"filed", "pending"}
    assert (
        ok(harness, alpha, "memory_query", {"versions_of": shipped})["memories"][0]["content"]
        == "Alpha ships on Thursdays."
    )
    assert [i["finding"]["id"] for i in ok(harness, alpha, "conflicts_list", {})["items"]] == [
        conflict
    ]


# -- memory browser ------------------------------------------------------------------------


def test_the_browser_filters_by_subject_and_kind(console: Console) -> None:
    harness = console.harness
    token = harness.token()
    write(harness, token, "Use trunk-based dev.", kind="decision")
    write(harness, token, "Alice prefers tabs.", kind="preference")
    console.sign_in(token)

    decisions = console.client.get("/console/memories?kind=decision").text

    assert "Use trunk-based dev." in decisions
    assert "Alice prefers tabs." not in decisions


def test_the_browser_filters_by_tags_author_and_status(console: Console) -> None:
    harness = console.harness
    reviewer = harness.token()
    alice = harness.token(scopes=("memory",), agent_id="alice")
    bob = harness.token(scopes=("memory",), agent_id="bob")
    write(harness, alice, "Alice: the cache TTL is 60 s.", tags=["cache"])
    write(harness, bob, "Bob: the queue holds 1000.", tags=["queue"])
    propose(harness, bob, "Bob proposes a 2000 queue.")
    console.sign_in(reviewer)

    tagged = console.client.get("/console/memories?tags=cache,unused").text
    by_bob = console.client.get("/console/memories?created_by=bob").text
    proposed = console.client.get("/console/memories?status=proposed").text

    assert "Alice: the cache TTL is 60 s." in tagged
    assert "Bob:" not in tagged
    assert "Bob: the queue holds 1000." in by_bob
    assert "Alice:" not in by_bob
    assert "Bob proposes a 2000 queue." not in by_bob  # active by default
    assert "Bob proposes a 2000 queue." in proposed
    assert "Bob: the queue holds 1000." not in proposed


def test_as_of_travels_back_to_the_version_valid_then_and_the_chain_shows_both(
    console: Console,
) -> None:
    harness = console.harness
    token = harness.token()
    old = write(harness, token, "Standup is at 09:30.", valid_from="2026-01-01T00:00:00Z")
    console.sign_in(token)
    reply = console.post(
        "/console/supersede",
        {
            "csrf": console.csrf(),
            "id": old,
            "content": "Standup is at 10:00.",
            "back": "memory",
        },
    )
    assert reply.status_code == 303
    new = ok(harness, token, "memory_get", {"id": old})["memory"]["superseded_by"]

    then = console.client.get("/console/memories?as_of=2026-02-01T12:00").text
    now = console.client.get("/console/memories").text
    chain = console.client.get(f"/console/memory?id={new}").text

    assert "Standup is at 09:30." in then
    assert "Standup is at 10:00." not in then
    assert "Standup is at 10:00." in now
    assert "Standup is at 09:30." not in now
    assert chain.index("Standup is at 09:30.") < chain.index("Standup is at 10:00.")
    assert "Version chain (2" in chain


def test_a_bad_filter_names_the_field(console: Console) -> None:
    console.sign_in(console.harness.token())

    reply = console.client.get("/console/memories?as_of=not-a-time")

    assert reply.status_code == 400
    assert "as_of" in reply.text
    assert "(got &#39;not-a-time&#39;)" in reply.text  # what was typed, not with a Z added
    assert console.client.get("/console/memories?as_of=2026-02-01").status_code == 200


def test_values_from_memories_are_escaped(console: Console) -> None:
    harness = console.harness
    token = harness.token()
    write(harness, token, "<script>alert(1)</script> is not run")
    console.sign_in(token)

    page = console.client.get("/console/memories").text

    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_every_page_and_action_sits_one_level_under_console() -> None:
    # The pages' URLs and redirects are relative (so a stage prefix like /v1 works): that holds
    # only while every route is /console/<name>, resolved against a sibling.
    from shared.console import console_router

    paths = {route.path for route in console_router(None).routes}  # type: ignore[arg-type,attr-defined]

    assert paths
    assert all(p.count("/") <= 2 for p in paths if not p.startswith("/console/static/")), paths


def test_a_conflict_merged_into_a_new_claim_or_marked_both_valid(console: Console) -> None:
    harness = console.harness
    token = harness.token()
    for content, subject in (
        ("The on-call rotation changes on Monday.", "on-call"),
        ("The on-call rotation changes on Friday.", "on-call"),
        ("Standups are at 09:30.", "standup"),
        ("Standups are at 10:00.", "standup"),
    ):
        write(harness, token, content, subject=subject)
    drain()
    by_topic = {
        i["memories"][0]["subject"]: i["finding"]["id"]
        for i in ok(harness, token, "conflicts_list", {})["items"]
    }
    console.sign_in(token)
    csrf = console.csrf()

    merged = console.post(
        "/console/resolve-conflict",
        {
            "csrf": csrf,
            "id": by_topic["on-call"],
            "action": "merge",
            "content": "The on-call rotation changes on Monday (Friday in holiday weeks).",
        },
    )
    both = console.post(
        "/console/resolve-conflict",
        {"csrf": csrf, "id": by_topic["standup"], "action": "both_valid", "note": "two teams"},
    )

    assert merged.status_code == 303
    assert both.status_code == 303
    active = [
        m["content"] for m in ok(harness, token, "memory_query", {"subject": "on-call"})["memories"]
    ]
    assert active == ["The on-call rotation changes on Monday (Friday in holiday weeks)."]
    resolved = ok(harness, token, "conflicts_list", {"status": "resolved"})["items"]
    actions = {i["finding"]["resolution"]["action"] for i in resolved}
    assert actions == {"merge", "both_valid"}


def test_a_duplicate_cluster_is_dismissed_keeping_both(console: Console) -> None:
    harness = console.harness
    token = harness.token()
    for _ in range(2):
        write(harness, token, "Releases are tagged vX.Y.Z.")
    drain()
    cluster = ok(harness, token, "duplicates_list", {})["items"][0]["finding"]["id"]
    console.sign_in(token)

    console.post(
        "/console/resolve-duplicate",
        {"csrf": console.csrf(), "id": cluster, "action": "dismiss", "note": "different repos"},
    )

    assert len(ok(harness, token, "memory_query", {})["memories"]) == 2
    dismissed = ok(harness, token, "duplicates_list", {"status": "dismissed"})["items"]
    assert [i["finding"]["id"] for i in dismissed] == [cluster]


def test_static_files_are_served_by_name_only(console: Console) -> None:
    css = console.client.get("/console/static/console.css")
    missing = console.client.get("/console/static/..%2Fviews.py")

    assert css.status_code == 200
    assert css.headers["content-type"].startswith("text/css")
    assert "default-src 'none'" in css.headers["content-security-policy"]
    assert missing.status_code == 404


def test_the_console_root_leads_to_sign_in(console: Console) -> None:
    first = console.client.get("/console", follow_redirects=False)
    second = console.client.get("/console/", follow_redirects=False)

    assert first.headers["location"] == "console/"
    assert second.headers["location"] == "login"


# -- the whole queue, a section and a page at a time ---------------------------------------

CARD = re.compile(r'<div class="card" id="(proposal|conflict|duplicate|flagged)-([^"]+)"')
NEXT = re.compile(r'<a href="(review\?[^"#]+)" rel="next">')
TAB = re.compile(r'<a href="review\?section=(\w+)"[^>]*>(\w+) <span class="count">([^<]+)</span>')


def cards(page: str, kind: str) -> list[str]:
    return [found for k, found in CARD.findall(page) if k == kind]


def finding_ids(listed: dict[str, Any]) -> set[str]:
    return {item["finding"]["id"] for item in listed["items"]}


def next_link(page: str) -> str | None:
    links = [html.unescape(href) for href in NEXT.findall(page)]
    return links[0] if links else None


def test_more_than_a_page_of_proposals_are_all_reachable_item_by_item(console: Console) -> None:
    harness = console.harness
    author = harness.token(scopes=("memory",), agent_id="prolific")
    proposals = {propose(harness, author, f"Proposal number {n}.") for n in range(25)}
    console.sign_in(harness.token())

    pages = [console.client.get("/console/review").text]
    while (later := next_link(pages[-1])) is not None:
        pages.append(console.client.get(f"/console/{later}").text)

    assert [len(cards(page, "proposal")) for page in pages] == [10, 10, 5]
    seen = [memory_id for page in pages for memory_id in cards(page, "proposal")]
    assert len(seen) == len(set(seen))
    assert set(seen) == proposals
    # Every page links the queue's sections with their counts, and says where it is.
    assert TAB.findall(pages[0]) == [
        ("proposals", "Proposals", "25"),
        ("conflicts", "Conflicts", "0"),
        ("duplicates", "Duplicates", "0"),
        ("flagged", "Flags", "0"),
    ]
    assert '<span class="range">11–20 of 25</span>' in pages[1]
    assert 'href="review?section=proposals">First page</a>' in pages[1]
    # Each item leads to the next one, the last of a page to the next page.
    first = cards(pages[0], "proposal")
    assert f'<a href="#proposal-{first[1]}">Next ↓</a>' in pages[0]
    assert f'<a href="#proposal-{first[0]}">↑ Previous</a>' in pages[0]
    assert "Item 10 of 25" in pages[0]
    assert pages[0].count(">Next page →</a>") == 2  # the last item's and the pager's


def test_each_section_has_its_own_link_count_and_pages(
    console: Console, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One per page (instead of 10) so two findings of each kind make a second page.
    monkeypatch.setattr(views, "QUEUE_PAGE", dict.fromkeys(views.QUEUE_SECTIONS, 1))
    harness = console.harness
    token = harness.token()
    for subject in ("freeze", "standup"):
        for claim in ("is", "is not"):
            write(harness, token, f"The {subject} {claim} on Friday.", subject=subject)
    for text in ("Backups run at 02:00 UTC.", "Logs are kept for 30 days."):
        for _ in range(2):
            write(harness, token, text)
    drain()
    flagged = [
        write(harness, token, text)
        for text in ("The coffee machine is on floor 3.", "Parking passes renew in March.")
    ]
    for memory_id in flagged:
        ok(harness, token, "flag_memory", {"memory_id": memory_id, "reason": "wrong"})
    drain()  # nothing new is found while the pages are read
    console.sign_in(token)

    everything = {
        "conflicts": finding_ids(ok(harness, token, "conflicts_list", {"limit": 100})),
        "duplicates": finding_ids(ok(harness, token, "duplicates_list", {"limit": 100})),
        "flagged": set(flagged),
    }
    counts = {
        name: count for name, _, count in TAB.findall(console.client.get("/console/review").text)
    }
    for section, kind in (
        ("conflicts", "conflict"),
        ("duplicates", "duplicate"),
        ("flagged", "flagged"),
    ):
        assert len(everything[section]) >= 2, section
        assert counts[section] == str(len(everything[section])), section
        # Follow the section's "next" links from its first page to its last.
        page = console.client.get(f"/console/review?section={section}").text
        assert 'aria-current="page">' + views.QUEUE_TITLES[section] in page
        seen = cards(page, kind)
        while (later := next_link(page)) is not None:
            page = console.client.get(f"/console/{later}").text
            assert len(cards(page, kind)) == 1, section
            assert not cards(page, "proposal"), section  # one section at a time
            seen += cards(page, kind)
        assert len(seen) == len(set(seen)), (section, seen)
        assert set(seen) == everything[section], section


def test_a_decision_returns_to_its_section(console: Console) -> None:
    harness = console.harness
    token = harness.token()
    memory_id = write_flagged(harness, token, "The lift is out of order.", reason="fixed")
    console.sign_in(token)

    reply = console.post(
        "/console/retract",
        {"csrf": console.csrf(), "id": memory_id, "reason": "fixed", "section": "flagged"},
    )

    assert reply.headers["location"] == "review?section=flagged&done=retracted"


def _post_routes() -> list[str]:
    from shared.console import console_router

    router = console_router(None)  # type: ignore[arg-type]
    return sorted(
        route.path  # type: ignore[attr-defined]
        for route in router.routes
        if "POST" in getattr(route, "methods", set())
    )


def test_every_state_changing_route_needs_the_csrf_token_and_the_same_origin(
    console: Console,
) -> None:
    # Enumerated from the router, so a POST route added later is checked too.
    posts = _post_routes()
    assert {"/console/review-proposals", "/console/retract", "/console/supersede"} <= set(posts)
    harness = console.harness
    token = harness.token()
    memory_id = write(harness, token, "Deploys need two approvals.")
    proposal = propose(harness, token, "Deploys need three approvals.")
    console.sign_in(token)
    fields = {
        "id": memory_id,
        "decision": "approve",
        "action": "dismiss",
        "reason": "forged",
        "content": "Deploys need no approval.",
    }

    for path in posts:
        if path == "/console/login":
            continue  # before a session: the nonce test above
        form = {**fields, "id": proposal if path.endswith("proposals") else memory_id}
        missing = console.post(path, form)
        wrong = console.post(path, {**form, "csrf": "0" * 64})
        cross = console.post(path, {**form, "csrf": console.csrf()}, origin="https://evil.test")
        fetched = console.post(
            path, {**form, "csrf": console.csrf()}, **{"sec-fetch-site": "cross-site"}
        )
        assert [r.status_code for r in (missing, wrong, cross, fetched)] == [403] * 4, path
        assert "cairn_console=" not in missing.headers.get("set-cookie", ""), path

    assert console.client.get("/console/review", follow_redirects=False).status_code == 200
    assert status_of(harness, token, memory_id) in {"filed", "pending"}
    assert status_of(harness, token, proposal) == "proposed"
    chain = ok(harness, token, "memory_query", {"versions_of": memory_id})["memories"]
    assert [m["content"] for m in chain] == ["Deploys need two approvals."]

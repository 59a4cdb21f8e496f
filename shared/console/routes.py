"""The web console at /console: server-rendered pages over cairn's tools.

Every page reads through `ToolClient` (the gateway's `tools/call` with the signed-in token), and
every form posts back to a route here that calls one tool and redirects (post/redirect/get). URLs
inside the pages are relative, so the console works at `/console/` locally and under API
Gateway's stage prefix (`/v1/console/`) alike.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse

from shared.console import security, views
from shared.console.client import ConsoleError, SignedOut, ToolClient
from shared.console.oauth import FLOW_COOKIE, FLOW_MAX_AGE, ConsoleOAuth, SignInFailed
from shared.protocol.blocking import run_blocking
from shared.protocol.gateway import McpGateway

if TYPE_CHECKING:
    from jinja2 import Environment

CONSOLE_PATH = "/console"
_HERE = Path(__file__).parent
_STATIC_TYPES = {".css": "text/css", ".js": "text/javascript", ".png": "image/png"}
# Served by name only: nothing the request says becomes a path on disk.
STATIC_FILES: dict[str, tuple[Path, str]] = {
    path.name: (path, _STATIC_TYPES[path.suffix])
    for path in (_HERE / "static").iterdir()
    if path.suffix in _STATIC_TYPES
}


@functools.cache
def _templates() -> Environment:
    """The page templates, loaded at the first page: jinja2's import is about a fifth of the
    gateway's cold start, and MCP requests never render a page."""
    from jinja2 import Environment, FileSystemLoader, pass_context, select_autoescape

    environment = Environment(
        loader=FileSystemLoader(_HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["when"] = views.when
    environment.filters["who"] = pass_context(_who)
    environment.globals["needs"] = views.needs
    return environment


def _who(context: Any, actor: Any) -> Any:
    """An actor (agent id, `token:<id>`) by its name, the id on hover; the id itself when it
    has no name (or the token may not ask for names). `names` comes from the page's view."""
    from markupsafe import Markup, escape

    actor = str(actor or "")
    name = (context.get("names") or {}).get(actor)
    if not name or name == actor:
        return escape(actor)
    return Markup('<span class="actor" title="{}">{}</span>').format(actor, name)


# What a successful action says after its redirect (the query carries the key, never text).
DONE_MESSAGES = {
    "approved": "Approved: the memory is now active and recallable.",
    "rejected": "Rejected: the proposal stays in the history, invisible to recall.",
    "conflict": "Conflict resolved.",
    "duplicate": "Duplicate cluster handled.",
    "retracted": "Memory retracted: kept with its history, gone from recall and search.",
    "superseded": "New version written; the old one is superseded.",
    "signed-out": "Signed out.",
}

Form = dict[str, list[str]]
Page = Callable[[Request, ToolClient, frozenset[str]], Awaitable[Response]]


def _scheme(request: Request) -> str:
    return request.headers.get("x-forwarded-proto", request.url.scheme)


def _host(request: Request) -> str:
    return request.headers.get("x-forwarded-host", request.headers.get("host", ""))


def _cookie_path(request: Request) -> str:
    """`/console` as the browser sees it. Behind API Gateway's REST stage the browser asks for
    `/v1/console/…` while the app is given `/console/…`: a cookie scoped to `/console` would
    never come back (sign-in would loop). The prefix is what the event's outer path has before
    the app's; none locally, behind CloudFront or on a custom domain."""
    event = request.scope.get("aws.event") or {}
    outer = str((event.get("requestContext") or {}).get("path") or "")
    inner = str(event.get("path") or "")
    prefix = outer[: -len(inner)] if inner and outer.endswith(inner) else ""
    return prefix.rstrip("/") + CONSOLE_PATH


def _client(gateway: McpGateway, request: Request, secret: str) -> ToolClient:
    return ToolClient(
        gateway,
        secret,
        host=request.headers.get("host", ""),
        base_url=f"{_scheme(request)}://{_host(request)}",
    )


def _secured(response: Response) -> Response:
    response.headers.update(security.SECURITY_HEADERS)
    return response


def _render(template: str, status: int = 200, **context: Any) -> Response:
    html = _templates().get_template(template).render(**context)
    return _secured(HTMLResponse(html, status_code=status))


def _redirect(location: str) -> Response:
    # 303: the browser follows with a GET, so a refresh never repeats the action.
    return _secured(RedirectResponse(location, status_code=303))


def _first(form: Form | Mapping[str, Any], name: str) -> str | None:
    values = form.get(name) or []
    value = values[0].strip() if values else ""
    return value or None


async def _form(request: Request) -> Form:
    body = await request.body()
    if len(body) > security.MAX_FORM_BYTES:
        raise ConsoleError(f"the form is larger than {security.MAX_FORM_BYTES} bytes", status=413)
    return parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=False)


def _signed_in_as(
    request: Request, secret: str, max_age: int, *, used: tuple[str, Literal["strict", "lax"]]
) -> Response:
    """To the review queue with `secret` as the session (team token or OAuth access token),
    dropping the cookie of the sign-in step that got here (`used`: its name and SameSite)."""
    response = _redirect("review")
    response.set_cookie(
        security.SESSION_COOKIE,
        secret,
        max_age=max_age,
        path=_cookie_path(request),
        httponly=True,
        samesite="strict",
        secure=security.cookie_secure(_scheme(request)),
    )
    response.delete_cookie(used[0], path=_cookie_path(request), samesite=used[1])
    return response


def _clear_session(request: Request, response: Response) -> Response:
    response.delete_cookie(security.SESSION_COOKIE, path=_cookie_path(request), samesite="strict")
    return response


class _Console:
    """What every console route shares: the gateway its pages call tools through, the optional
    OAuth sign-in, and the steps around a page (`signed_in`) and a form post (`action`)."""

    def __init__(self, gateway: McpGateway, oauth: ConsoleOAuth | None) -> None:
        self.gateway = gateway
        self.oauth = oauth

    async def call(
        self, client: ToolClient, tool: str, arguments: dict[str, Any]
    ) -> dict[str, Any]:
        # Tool calls block on I/O (the stores, Lambda Invoke): keep the event loop free.
        return await run_blocking(client.call, tool, arguments)

    async def signed_in(self, request: Request, page: Page) -> Response:
        """`page` for the signed-in caller; to the sign-in form without a session."""
        secret = request.cookies.get(security.SESSION_COOKIE)
        if not secret:
            return _redirect("login")
        client = _client(self.gateway, request, secret)
        tools: frozenset[str] = frozenset()
        try:
            tools = await run_blocking(client.callable_tools)
            return await page(request, client, tools)
        except SignedOut:
            return _clear_session(request, _redirect("login?expired=1"))
        except ConsoleError as exc:
            return _render("error.html", exc.status, error=exc.message, tools=tools, page="")

    @staticmethod
    def page_context(request: Request, client: ToolClient, tools: frozenset[str]) -> dict[str, Any]:
        done = request.query_params.get("done")
        return {
            "csrf": security.csrf_token(client.secret),
            "tools": tools,
            "done": DONE_MESSAGES.get(done or ""),
        }

    async def action(
        self, request: Request, perform: Callable[[ToolClient, Form], Awaitable[str]]
    ) -> Response:
        """A state-changing POST: same origin, valid CSRF token, then one tool call."""
        secret = request.cookies.get(security.SESSION_COOKIE)
        if not secret:
            return _redirect("login")
        headers = {k.lower(): v for k, v in request.headers.items()}
        if not security.same_origin(headers, _host(request)):
            return _render("error.html", 403, error="Cross-site request refused.", page="")
        try:
            form = await _form(request)
        except ConsoleError as exc:
            return _render("error.html", exc.status, error=exc.message, page="")
        if not security.csrf_valid(secret, _first(form, "csrf")):
            return _render(
                "error.html",
                403,
                error="The form's CSRF token is missing or wrong: reload the page and try again.",
                page="",
            )
        client = _client(self.gateway, request, secret)
        try:
            location = await perform(client, form)
        except SignedOut:
            return _clear_session(request, _redirect("login?expired=1"))
        except ConsoleError as exc:
            tools = await run_blocking(client.callable_tools)
            back = _first(form, "back") or "review"
            return _render(
                "error.html",
                exc.status,
                error=exc.message,
                tools=tools,
                csrf=security.csrf_token(secret),
                back=back if back in views.BACK_PAGES else "review",
                page="",
            )
        return _redirect(location)

    def login_failed(self, request: Request, nonce: str, message: str) -> Response:
        """The sign-in form again, with why (and a fresh nonce)."""
        response = _render(
            "login.html",
            401,
            nonce=nonce,
            error=message,
            oauth=self.oauth is not None,
            page="login",
        )
        return _with_login_nonce(response, request, nonce)


def _with_login_nonce(response: Response, request: Request, nonce: str) -> Response:
    """`response` (a sign-in form) with the nonce its form must post back, for 15 minutes."""
    response.set_cookie(
        security.LOGIN_COOKIE,
        nonce,
        max_age=900,
        path=_cookie_path(request),
        httponly=True,
        samesite="strict",
        secure=security.cookie_secure(_scheme(request)),
    )
    return response


def console_router(gateway: McpGateway, oauth: ConsoleOAuth | None = None) -> APIRouter:
    """The console's routes, for `app.include_router` (shared.protocol.app mounts them);
    `oauth` adds sign-in through the authorization server beside the team-token form."""
    router = APIRouter(prefix=CONSOLE_PATH, include_in_schema=False)
    console = _Console(gateway, oauth)
    _sign_in_routes(router, console)
    _review_routes(router, console)
    _memory_routes(router, console)
    _work_routes(router, console)
    _static_routes(router)
    return router


def _sign_in_routes(router: APIRouter, console: _Console) -> None:
    """The console's root, the team-token and OAuth sign-in, and sign-out."""

    @router.get("")
    async def root_no_slash() -> Response:
        return _redirect("console/")

    @router.get("/")
    async def root(request: Request) -> Response:
        return _redirect("review" if request.cookies.get(security.SESSION_COOKIE) else "login")

    @router.get("/login")
    async def login_form(request: Request) -> Response:
        nonce = security.new_login_nonce()
        response = _render(
            "login.html",
            nonce=nonce,
            expired=request.query_params.get("expired") == "1",
            done=DONE_MESSAGES.get(request.query_params.get("done") or ""),
            oauth=console.oauth is not None,
            page="login",
        )
        return _with_login_nonce(response, request, nonce)

    @router.post("/login")
    async def login(request: Request) -> Response:
        headers = {k.lower(): v for k, v in request.headers.items()}
        try:
            form = await _form(request)
        except ConsoleError as exc:  # a form past its limit: 413, as every other form
            return _render("error.html", exc.status, error=exc.message, page="")
        if not security.same_origin(headers, _host(request)) or not security.login_nonce_valid(
            request.cookies.get(security.LOGIN_COOKIE), _first(form, "csrf")
        ):
            return _render(
                "error.html",
                403,
                error="The sign-in form expired or came from another site: reload and try again.",
                page="",
            )
        secret = _first(form, "token")
        nonce = security.new_login_nonce()
        if not secret:
            return console.login_failed(
                request, nonce, "Paste a team token (it starts with cairn_sk_)."
            )
        client = _client(console.gateway, request, secret)
        try:
            # tools/list authenticates the token exactly as an MCP client's first call does.
            await run_blocking(client.callable_tools)
        except ConsoleError:
            return console.login_failed(request, nonce, "That token was not accepted.")
        return _signed_in_as(
            request, secret, security.SESSION_MAX_AGE, used=(security.LOGIN_COOKIE, "strict")
        )

    @router.get("/oauth-start")
    async def oauth_start(request: Request) -> Response:
        if console.oauth is None:
            return _render("error.html", 404, error="No OAuth sign-in is set up here.", page="")
        authorize, flow = console.oauth.start()
        response = _secured(RedirectResponse(authorize, status_code=303))
        response.set_cookie(
            FLOW_COOKIE,
            flow,
            max_age=FLOW_MAX_AGE,
            path=_cookie_path(request),
            httponly=True,
            samesite="lax",  # the authorization server sends the browser back cross-site
            secure=security.cookie_secure(_scheme(request)),
        )
        return response

    @router.get("/oauth-callback")
    async def oauth_callback(request: Request) -> Response:
        if console.oauth is None:
            return _render("error.html", 404, error="No OAuth sign-in is set up here.", page="")
        params = request.query_params
        nonce = security.new_login_nonce()
        if params.get("error"):
            return console.login_failed(request, nonce, "The sign-in was not completed.")
        try:
            token, lifetime = await run_blocking(
                console.oauth.finish,
                request.cookies.get(FLOW_COOKIE),
                params.get("state"),
                params.get("code"),
            )
            # The gateway verifies the token as it would for an MCP client's first call.
            await run_blocking(_client(console.gateway, request, token).callable_tools)
        except SignInFailed as exc:
            return console.login_failed(request, nonce, f"Sign-in failed: {exc}.")
        except ConsoleError:
            return console.login_failed(request, nonce, "cairn did not accept that sign-in.")
        return _signed_in_as(
            request, token, min(lifetime, security.SESSION_MAX_AGE), used=(FLOW_COOKIE, "lax")
        )

    @router.post("/logout")
    async def logout(request: Request) -> Response:
        async def perform(client: ToolClient, form: Form) -> str:
            return "login?done=signed-out"

        response = await console.action(request, perform)
        if response.status_code == 303:
            _clear_session(request, response)
        return response


def _review_routes(router: APIRouter, console: _Console) -> None:
    """The review queue: proposals, conflicts and duplicates, and retract / supersede."""

    @router.get("/review")
    async def review(request: Request) -> Response:
        async def page(request: Request, client: ToolClient, tools: frozenset[str]) -> Response:
            queue = await run_blocking(views.review_queue, client, tools, request.query_params)
            return _render(
                "review.html",
                **console.page_context(request, client, tools),
                queue=queue,
                names=queue.names,
                page="review",
            )

        return await console.signed_in(request, page)

    @router.post("/review-proposals")
    async def review_proposals(request: Request) -> Response:
        async def perform(client: ToolClient, form: Form) -> str:
            ids = [value for value in form.get("id", []) if value.strip()]
            if not ids:
                raise ConsoleError("Choose at least one proposal.", field="ids")
            decision = _first(form, "decision")
            if decision not in {"approve", "reject"}:
                raise ConsoleError("`decision` must be approve or reject.", field="decision")
            arguments: dict[str, Any] = {"ids": ids, "decision": decision}
            if note := _first(form, "note"):
                arguments["note"] = note
            outcome = await console.call(client, "memory_review", arguments)
            refused = [r for r in outcome.get("results", []) if not r.get("decided")]
            if refused:
                raise ConsoleError(
                    "; ".join(
                        f"{r['id']}: {r.get('message') or 'not open'} (now {r.get('status')})"
                        for r in refused
                    ),
                    status=409,
                )
            return _to_queue(form, "approved" if decision == "approve" else "rejected")

        return await console.action(request, perform)

    @router.post("/resolve-conflict")
    async def resolve_conflict(request: Request) -> Response:
        async def perform(client: ToolClient, form: Form) -> str:
            arguments = _arguments(form, "id", "action", "keep_id", "content", "note")
            await console.call(client, "conflict_resolve", arguments)
            return _to_queue(form, "conflict")

        return await console.action(request, perform)

    @router.post("/resolve-duplicate")
    async def resolve_duplicate(request: Request) -> Response:
        async def perform(client: ToolClient, form: Form) -> str:
            arguments = _arguments(form, "id", "action", "keep_id", "note")
            await console.call(client, "duplicate_resolve", arguments)
            return _to_queue(form, "duplicate")

        return await console.action(request, perform)

    @router.post("/retract")
    async def retract(request: Request) -> Response:
        async def perform(client: ToolClient, form: Form) -> str:
            arguments = _arguments(form, "id", "reason")
            await console.call(client, "memory_retract", arguments)
            return _back(form, "retracted", arguments.get("id"))

        return await console.action(request, perform)

    @router.post("/supersede")
    async def supersede(request: Request) -> Response:
        async def perform(client: ToolClient, form: Form) -> str:
            arguments = _arguments(form, "id", "content", "reason")
            result = await console.call(client, "memory_supersede", arguments)
            return _back(form, "superseded", result["memory"]["id"])

        return await console.action(request, perform)


def _memory_routes(router: APIRouter, console: _Console) -> None:
    """The memory browser: search and one memory's version chain."""

    @router.get("/memories")
    async def memories(request: Request) -> Response:
        async def page(request: Request, client: ToolClient, tools: frozenset[str]) -> Response:
            search = views.MemorySearch.from_query(request.query_params)
            try:
                found = await run_blocking(views.browse, client, tools, search)
                error = None
            except SignedOut:
                raise
            except ConsoleError as exc:
                found, error = None, exc.message
            return _render(
                "memories.html",
                400 if error else 200,
                **console.page_context(request, client, tools),
                search=search,
                found=found,
                names=found.names if found else {},
                error=error,
                page="memories",
            )

        return await console.signed_in(request, page)

    @router.get("/memory")
    async def memory(request: Request) -> Response:
        async def page(request: Request, client: ToolClient, tools: frozenset[str]) -> Response:
            memory_id = request.query_params.get("id", "")
            chain = await run_blocking(views.version_chain, client, memory_id)
            names = await run_blocking(views.actor_names, client, tools, views.memory_actors(chain))
            return _render(
                "memory.html",
                200 if chain else 404,
                **console.page_context(request, client, tools),
                memory_id=memory_id,
                chain=chain,
                names=names,
                page="memories",
            )

        return await console.signed_in(request, page)


def _work_routes(router: APIRouter, console: _Console) -> None:
    """The work view (tasks, workflows and costs) and the sync view (connectors), read-only."""

    def work(client: ToolClient, tools: frozenset[str]) -> dict[str, Any]:
        overview = views.work_overview(client, tools)
        return {"work": overview, "names": overview.names}

    def sync(client: ToolClient, tools: frozenset[str]) -> dict[str, Any]:
        return {"connectors": views.sync_connectors(client, tools)}

    _read_only_page(router, console, "work", work)
    _read_only_page(router, console, "sync", sync)


def _read_only_page(
    router: APIRouter,
    console: _Console,
    name: str,
    read: Callable[[ToolClient, frozenset[str]], dict[str, Any]],
) -> None:
    """GET /<name>: `<name>.html` with what `read` gathers through the tools."""

    @router.get(f"/{name}")
    async def view(request: Request) -> Response:
        async def page(request: Request, client: ToolClient, tools: frozenset[str]) -> Response:
            context = await run_blocking(read, client, tools)
            return _render(
                f"{name}.html",
                **console.page_context(request, client, tools),
                **context,
                page=name,
            )

        return await console.signed_in(request, page)


def _static_routes(router: APIRouter) -> None:
    """The console's stylesheet, script and images, served by name."""

    # Path parameters read from the request, not declared: a declared one makes FastAPI build a
    # pydantic field (and import pydantic.v1) at start-up, in the gateway's cold start.
    @router.get("/static/{name}")
    async def static(request: Request) -> Response:
        found = STATIC_FILES.get(str(request.path_params["name"]))
        if found is None:
            return _secured(Response(status_code=404))
        path, media_type = found
        response = Response(path.read_bytes(), media_type=media_type)
        response.headers.update(security.SECURITY_HEADERS)
        response.headers["Cache-Control"] = "public, max-age=300"
        return response


def _arguments(form: Form, *names: str) -> dict[str, Any]:
    """The named non-empty form fields, as a tool's arguments (the tool validates them)."""
    return {name: value for name in names if (value := _first(form, name)) is not None}


def _back(form: Form, done: str, memory_id: str | None) -> str:
    """Where an action on one memory returns: its page, or the queue it was taken from."""
    if _first(form, "back") == "memory" and memory_id:
        return "memory?" + urlencode({"id": memory_id, "done": done})
    return _to_queue(form, done)


def _to_queue(form: Form, done: str) -> str:
    """Back to the queue's section the decision was taken in (its first page: what was
    decided left it), saying what was done."""
    section = _first(form, "section")
    pairs = [("section", section)] if section in views.QUEUE_SECTIONS else []
    return "review?" + urlencode([*pairs, ("done", done)])

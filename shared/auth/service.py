"""Issue, authenticate, list and revoke team tokens; enforce per-token rate limits."""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import cast

from shared.auth.cache import (
    PROCESS,
    CacheGroup,
    RateBuckets,
    Verified,
    VerifiedTokens,
    slice_size,
)
from shared.auth.contexts import (
    CONTEXT_NAMES,
    PRESETS,
    ContextName,
    ContextRequest,
    ContextView,
    TeamContext,
    allowed_tools,
)
from shared.auth.errors import InvalidToken, RateLimited, UnknownToken
from shared.auth.models import IssuedToken, Revocation, TokenRecord, TokenRequest
from shared.auth.ports import TokenStore
from shared.auth.principal import Principal

SECRET_PREFIX = "cairn_sk_"
RATE_WINDOW_SECONDS = 60
# How long a process trusts a token it verified before reading it again: the bound on how late a
# revocation made elsewhere takes effect here (docs/infra/api-and-auth.md, "Auth per request").
DEFAULT_TOKEN_CACHE_SECONDS = 60.0


def hash_secret(pepper: bytes, secret: str) -> str:
    """Keyed hash of a token secret (HMAC-SHA256): a table leak alone reveals no usable token."""
    return hmac.new(pepper, secret.encode(), hashlib.sha256).hexdigest()


class TokenService:
    """Tokens are `cairn_sk_` + 32 random bytes, shown once, stored only as a keyed hash."""

    def __init__(
        self,
        store: TokenStore,
        pepper: bytes,
        clock: Callable[[], float] = time.time,
        cache_seconds: float = DEFAULT_TOKEN_CACHE_SECONDS,
        cache_group: CacheGroup = PROCESS,
    ) -> None:
        """`cache_seconds`: how long a verified token is trusted without reading it again (0:
        read on every request). A revocation through any service of `cache_group` (by default
        the whole process) evicts the token from all their caches at once."""
        self._store = store
        self._pepper = pepper
        self._clock = clock
        self._verified = VerifiedTokens(cache_seconds, cache_group)
        self._buckets = RateBuckets()

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), tz=UTC)

    def issue(
        self,
        request: TokenRequest,
        secret: str | None = None,
        *,
        issuer: Principal | None = None,
    ) -> IssuedToken:
        """Create a token. `secret` is only given for the local dev token (`CAIRN_DEV_TOKEN`).

        With `issuer` (the token calling `agent.register`) the new token expires no later and
        allows no more requests per minute than the issuer, records `issued_by`, and is revoked
        when the issuer is.
        """
        secret = secret or SECRET_PREFIX + secrets.token_urlsafe(32)
        now = self._now()
        expires_at = now + timedelta(days=request.expires_days) if request.expires_days else None
        rate_limit = request.rate_limit_per_minute
        allowed, context = request.allowed_tools, request.context
        issued_by = None
        if issuer is not None:
            if issuer.team != request.team:
                raise ValueError(
                    f"a token of team {issuer.team!r} cannot mint for team {request.team!r}"
                )
            expires_at = _earliest(expires_at, issuer.token_expires_at)
            if issuer.rate_limit_per_minute is not None:
                rate_limit = min(rate_limit, issuer.rate_limit_per_minute)
            allowed, context = _narrowed(allowed, context, issuer)
            issued_by = issuer.token_id
        record = TokenRecord(
            token_id="tok_" + secrets.token_hex(8),
            team=request.team,
            name=request.name,
            scopes=request.scopes,
            allowed_tools=allowed,
            context=context,
            agent_id=request.agent_id,
            created_at=now,
            expires_at=expires_at,
            rate_limit_per_minute=rate_limit,
            issued_by=issued_by,
            toolsets=request.toolsets,
        )
        self._store.put(hash_secret(self._pepper, secret), record)
        return IssuedToken(secret=secret, record=record)

    def find(self, secret: str) -> TokenRecord | None:
        """The record stored for `secret`, active or not (None when no token has it)."""
        return self._store.get_by_hash(hash_secret(self._pepper, secret))

    def is_active(self, record: TokenRecord) -> bool:
        """Neither revoked nor expired, by this service's clock."""
        return record.is_active(self._now())

    def authenticate(self, secret: str | None) -> tuple[Principal, TokenRecord]:
        """The principal of an active token, or `InvalidToken`.

        A token verified less than `cache_seconds` ago is not read again (nor its team's
        context); its expiry is still checked against the clock on every call.
        """
        if not secret:
            raise InvalidToken("no bearer token")
        secret_hash = hash_secret(self._pepper, secret)
        now = self._clock()
        cached = self._verified.get(secret_hash, now)
        if cached is not None:
            if not cached.record.is_active(datetime.fromtimestamp(now, tz=UTC)):
                raise InvalidToken("unknown, revoked or expired token")
            return cached.principal, cached.record
        record = self._store.get_by_hash(secret_hash)
        if record is None or not record.is_active(datetime.fromtimestamp(now, tz=UTC)):
            # Unknown and inactive tokens are not remembered: a token issued a moment later
            # elsewhere works at once, and a refusal always reflects the store.
            raise InvalidToken("unknown, revoked or expired token")
        principal = Principal(
            team=record.team,
            token_id=record.token_id,
            token_name=record.name,
            scopes=frozenset(record.scopes),
            allowed_tools=self._allowed_tools(record),
            context=record.context,
            agent_id=record.agent_id,
            token_expires_at=record.expires_at,
            rate_limit_per_minute=record.rate_limit_per_minute,
            toolsets=record.toolsets,
        )
        self._verified.put(secret_hash, Verified(record, principal, now))
        return principal, record

    def _allowed_tools(self, record: TokenRecord) -> frozenset[str] | None:
        if record.context is not None:
            # Read with the token (so within the cache bound): a team's change to a preset reaches
            # its tokens at once in the process that made it, within `cache_seconds` elsewhere.
            return allowed_tools(
                record.context, self._store.get_context(record.team, record.context)
            )
        return frozenset(record.allowed_tools) if record.allowed_tools else None

    def authenticate_and_limit(self, secret: str | None) -> Principal:
        """Authenticate, then count the request against the token's per-minute limit.

        This is the gateway's one auth call per team-token request: `InvalidToken` or
        `RateLimited`.
        """
        principal, record = self.authenticate(secret)
        self.limit(principal.token_id, record.rate_limit_per_minute)
        return principal

    def limit(self, caller_id: str, per_minute: int) -> None:
        """Count one request of `caller_id` (a token id, or `oauth:<sub>`) in the current
        minute; `RateLimited` once it is over `per_minute`.

        Requests are admitted from a slice of the minute's budget reserved in the store (one
        write per slice, see `shared.auth.cache.slice_size`); all processes together never
        admit more than `per_minute` in a minute.
        """
        now = self._clock()
        window_start = int(now // RATE_WINDOW_SECONDS * RATE_WINDOW_SECONDS)
        window_end = window_start + RATE_WINDOW_SECONDS
        admitted = self._buckets.take(caller_id, window_start)
        if admitted is None:
            granted = self._store.reserve_requests(
                caller_id, window_start, window_end + 300, slice_size(per_minute), per_minute
            )
            self._buckets.add(caller_id, window_start, granted)
            admitted = granted > 0
        if not admitted:
            raise RateLimited(max(1, math.ceil(window_end - now)))

    def list_team(self, team: str) -> list[TokenRecord]:
        return sorted(self._store.list_team(team), key=lambda r: r.created_at)

    def contexts(self, team: str) -> list[ContextView]:
        """Every allow-list context as `team` sees it: its own version, else the preset."""
        views: list[ContextView] = []
        for name in CONTEXT_NAMES:
            own = self._store.get_context(team, name)
            tools = own.tools if own is not None else PRESETS[name]
            views.append(
                ContextView(
                    name=name,
                    tools=None if tools is None else list(tools),
                    source="team" if own is not None else "preset",
                    updated_at=own.updated_at if own is not None else None,
                )
            )
        return views

    def set_context(self, request: ContextRequest, by: str | None = None) -> ContextView:
        """Give `request.team` its own version of a context (every token of it follows)."""
        context = TeamContext(
            name=request.name,
            tools=request.chosen_tools(),
            updated_at=self._now(),
            updated_by=by,
        )
        self._store.put_context(request.team, context)
        self._verified.group.evict(team=request.team)
        return next(v for v in self.contexts(request.team) if v.name == request.name)

    def reset_context(self, team: str, name: ContextName) -> ContextView:
        """Return `team` to the preset of context `name`."""
        self._store.delete_context(team, name)
        self._verified.group.evict(team=team)
        return next(v for v in self.contexts(team) if v.name == name)

    def revoke(self, token_id: str) -> Revocation:
        """Revoke a token and, with it, every token it issued (and theirs, all the way down).

        `also_revoked` lists the issued tokens this call revoked (ones revoked before are left
        out). `UnknownToken` when no token has the id.
        """
        revoked_at = self._now().isoformat()
        record = self._store.revoke(token_id, revoked_at)
        if record is None:
            raise UnknownToken(f"no token with id {token_id!r}")
        also_revoked: list[TokenRecord] = []
        seen = {record.token_id}
        issuers = [record.token_id]
        while issuers:
            for child in self._store.list_issued_by(record.team, issuers.pop()):
                if child.token_id in seen:
                    continue
                seen.add(child.token_id)
                issuers.append(child.token_id)
                if child.revoked_at is None:
                    revoked = self._store.revoke(child.token_id, revoked_at)
                    if revoked is not None:
                        also_revoked.append(revoked)
        # This process refuses them from now on; others within their cache bound.
        self._verified.group.evict(token_ids=seen)
        return Revocation(record=record, also_revoked=tuple(also_revoked))


def _narrowed(
    allowed: tuple[str, ...] | None, context: ContextName | None, issuer: Principal
) -> tuple[tuple[str, ...] | None, ContextName | None]:
    """What a token minted by `issuer` may call: never a tool the issuer may not.

    An issuer in a context passes its context on (the team's version of it keeps applying to
    both); an issuer with an explicit allow-list passes on that list, narrowed by the one asked
    for.
    """
    if issuer.context is not None:
        # A principal's context comes from a stored record, validated when it was issued.
        return None, cast(ContextName, issuer.context)
    if issuer.allowed_tools is not None:
        wanted = set(allowed) if allowed else set(issuer.allowed_tools)
        narrowed = tuple(sorted(wanted & issuer.allowed_tools))
        if not narrowed:  # an empty list would read as "no allow-list": every tool
            raise ValueError("the issuing token may call none of the tools asked for")
        return narrowed, None
    return allowed, context


def _earliest(first: datetime | None, second: datetime | None) -> datetime | None:
    """The earlier of two expiry times, where None means never."""
    if first is None:
        return second
    if second is None:
        return first
    return min(first, second)

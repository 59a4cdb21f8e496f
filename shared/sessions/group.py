"""The sessions tool group itself; its tools register on it from `tools` (`@GROUP.tool`)."""

from __future__ import annotations

from shared.config import names
from shared.sessions.service import SessionService
from shared.sessions.wiring import build_session_service
from shared.tools.registry import ToolGroup

GROUP: ToolGroup[SessionService] = ToolGroup(
    name=names.GROUP_SESSIONS, build_service=build_session_service
)

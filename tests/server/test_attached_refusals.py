"""A REPL attached to a live session (`avatar attach`) has no agent of its own: opening another
session from it (`/new`, `/resume`, `/continue`, `/fork`) is refused in one line, and nothing
is opened in the attaching process (docs/design.md §11: what would change the session is the
business of the process that opened it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from avatar.cli.repl.slash import lookup
from avatar.core.errors import AvatarError
from avatar.server.hub import Hub
from tests.server.test_live_switch import attached, hub  # noqa: F401  (the fixture)
from tests.support.slash import SlashRepl


@pytest.mark.parametrize("command", [["/new"], ["/continue"], ["/resume", "abc"], ["/fork"]])
async def test_an_attached_repl_opens_no_session_of_its_own(
    hub: Hub,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
) -> None:
    async with attached(hub, tmp_path, monkeypatch) as (remote, live):
        slash = lookup(command[0])
        assert slash is not None
        with pytest.raises(AvatarError, match="for the process that opened this session"):
            await slash.handler(SlashRepl(remote), command[1:])  # type: ignore[arg-type]
        assert remote.current is None  # nothing opened here
        assert remote.status().session_id == live.session_id  # still on the live one

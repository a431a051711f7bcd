"""A chat's error lines (`avatar.cli.output.render`): each said once. An agent's death could
reach a joined chat's turn twice through the server, and the chat printed the same line twice
(found by tests/server/test_stress.py); a different error is still said."""

from __future__ import annotations

import io

from avatar.cli.output.render import LineRenderer
from avatar.core.events import Error


def test_the_same_error_is_said_once_and_another_is_said_too() -> None:
    err = io.StringIO()
    renderer = LineRenderer(False, io.StringIO(), err)
    died = Error(message="agent0 exited unexpectedly", detail="out of cheese\n(killed by SIGKILL)")
    renderer.on_event(died)
    renderer.on_event(Error(message=died.message, detail=died.detail))
    renderer.on_event(Error(message="agent0: Internal error"))
    assert err.getvalue() == (
        "avatar: agent0 exited unexpectedly ((killed by SIGKILL))\navatar: agent0: Internal error\n"
    )
    assert len(renderer.errors) == 3  # (each counts for the exit code)

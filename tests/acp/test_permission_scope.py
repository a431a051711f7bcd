"""An ACP agent's permission request is checked against the scope before any answer: an edit
outside the project or of a protected or denied path is rejected even when the permission
policy allows everything, and the agent — which applies its edits itself, as codex does —
leaves the file as it was. The fake agent asks with the facts in the request, or announces
them in a `tool_call` update first and repeats only the id (codex's shape)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from avatar.core.config import Scope, Settings
from avatar.core.events import Notice, PermissionRequested
from tests.acp.conftest import Harness, build, opened, text_of
from tests.support.protected import ORIGINAL, PROTECTED, plant

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def allow_all(request: PermissionRequested) -> bool:
    return True


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Harness]:
    root = tmp_path_factory.mktemp("scope")
    settings = Settings(
        scope=Scope(deny=["**/.env", "**/.env.*", "private"], shell_commands=["ls"])
    )
    h = build(root, "", permission=allow_all, settings=settings)
    plant(h.cwd)
    (h.cwd / "private").mkdir()
    (h.cwd / "private/key.txt").write_text(ORIGINAL)
    (root / "outside.txt").write_text(ORIGINAL)
    async with opened(h):
        yield h


@pytest_asyncio.fixture(loop_scope="module")
async def h(shared: Harness) -> Harness:
    shared.asked.clear()
    return shared


async def edit(h: Harness, **edit: object) -> tuple[str, list[object]]:
    await h.configure(edit=edit)
    events = await h.turn("change it")
    return text_of(events), events


def denied(events: list[object]) -> PermissionRequested:
    (event,) = [e for e in events if isinstance(e, PermissionRequested)]
    assert event.decision == "deny", event
    notices = [e.message for e in events if isinstance(e, Notice)]
    assert any(event.reason and event.reason in n for n in notices), notices
    return event


@pytest.mark.parametrize("announce", [False, True], ids=["in-request", "announced"])
@pytest.mark.parametrize("kind", ["edit", "delete", "move", None])
async def test_edit_outside_the_project_is_rejected(h: Harness, announce: bool, kind: str) -> None:
    outside = h.root / "outside.txt"
    answer, events = await edit(h, path=str(outside), text="pwned\n", kind=kind, announce=announce)
    assert "edit answer: no" in answer  # the agent's reject option was chosen
    assert outside.read_text() == ORIGINAL
    assert "outside the session's directories" in (denied(events).reason or "")
    assert h.asked == []  # the permission policy was never asked


@pytest.mark.parametrize("announce", [False, True], ids=["in-request", "announced"])
@pytest.mark.parametrize("rel", [*PROTECTED, "private/key.txt", "../outside.txt"])
async def test_protected_and_denied_paths_are_rejected(
    h: Harness, rel: str, announce: bool
) -> None:
    target = h.cwd / rel
    answer, events = await edit(h, path=str(target), text="pwned\n", announce=announce)
    assert "edit answer: no" in answer
    assert target.read_text() == ORIGINAL
    denied(events)


async def test_edit_inside_the_project_is_the_policys_to_answer(h: Harness) -> None:
    target = h.cwd / "notes.txt"
    answer, events = await edit(h, path="notes.txt", text="new notes\n", announce=True)
    assert "edit answer: yes" in answer and target.read_text() == "new notes\n"
    (event,) = [e for e in events if isinstance(e, PermissionRequested)]
    assert event.decision == "allow" and [a.kind for a in h.asked] == ["edit"]


@pytest.mark.parametrize(("command", "allowed"), [("ls -la", True), ("rm -rf src", False)])
async def test_execute_requests_pass_the_shell_allow_list(
    h: Harness, command: str, allowed: bool
) -> None:
    answer, events = await edit(h, kind="execute", command=command)
    assert f"edit answer: {'yes' if allowed else 'no'}" in answer
    if not allowed:
        assert "not allowed by the scope" in (denied(events).reason or "")


async def test_allow_protected_lets_the_named_path_through(tmp_path: Path) -> None:
    settings = Settings(scope=Scope(allow_protected=[".git/hooks"]))
    h = build(tmp_path / "a", settings=settings, permission=allow_all)
    hook, config = h.cwd / ".git/hooks/pre-commit", h.cwd / ".git/config"
    hook.parent.mkdir(parents=True)
    config.write_text(ORIGINAL)
    async with opened(h):
        answer, _ = await edit(h, path=str(hook), text="#!/bin/sh\n")
        assert "edit answer: yes" in answer and hook.read_text() == "#!/bin/sh\n"
        answer, _ = await edit(h, path=str(config), text="pwned\n")
        assert "edit answer: no" in answer and config.read_text() == ORIGINAL


# What cannot be checked (issue 30): the agent names the file it will write only in its
# title, or under a key of `raw_input` the door does not know, or names one file and titles
# another. Each was allowed before, and the agent wrote outside the project.
UNCHECKED = {
    "title only": {"kind": "edit", "title": "Write OUT"},
    "title only, no kind": {"kind": None, "title": "Write OUT"},
    "unknown key": {"kind": "edit", "raw_input": {"target_file": "OUT"}},
    "unknown key beside a known one": {
        "kind": "move",
        "path": "notes.txt",
        "raw_input": {"file_path": "notes.txt", "destination": "OUT"},
    },
    "title names another file": {"kind": "move", "path": "notes.txt", "title": "Move to OUT"},
}


@pytest.mark.parametrize("announce", [False, True], ids=["in-request", "announced"])
@pytest.mark.parametrize("case", list(UNCHECKED))
async def test_a_request_that_cannot_be_checked_is_denied(
    h: Harness, case: str, announce: bool
) -> None:
    outside = h.root / "outside.txt"
    spec = json.loads(json.dumps(UNCHECKED[case]).replace("OUT", str(outside)))
    answer, events = await edit(h, **spec, write_to=str(outside), announce=announce)
    assert "edit answer: no" in answer
    assert outside.read_text() == ORIGINAL
    event = denied(events)
    assert "cannot be checked" in (event.reason or "")
    [line] = [e.message for e in events if isinstance(e, Notice)]
    assert line.startswith("denied fake's request "), line  # the agent and what it asked
    assert h.asked == []

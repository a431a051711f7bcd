"""An agent's missing operation is never faked (issue 22, acceptance 3): through the installed
`avatar` command, on the fake ACP agent configured as provider `fake`.

Where the agent offers no `session/delete`, `session delete` exits 1 with one stderr line and
nothing changes, neither the agent's files nor avatar's records (`--forget` then removes avatar's
record only); where it offers no `session/fork`, `session fork` does the same (`--from-copy`
opens a new session seeded with the whole history); a fork's record holds the whole history it
inherited, and `session fork` prints the id alone on stdout.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tests.support.acp_agent import provider_entry, seed_session
from tests.support.drive import Avatar
from tests.support.homes import AgentHome, avatar_env
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _avatar(home: AgentHome, **caps: bool) -> Avatar:
    """avatar with the fake ACP agent (load, list and `caps`) as provider `fake`."""
    env = avatar_env(home)
    fake = provider_entry(home.root / "fake-state", load=True, list=True, **caps)
    Path(env["AVATAR_CONFIG"]).write_text(json.dumps({"providers": {"fake": fake}}))
    return Avatar(home, env, timeout=120)


def _disk(home: AgentHome) -> dict[str, bytes]:
    """The agent's sessions and avatar's records of them, file by file (the fake agent's
    log of the requests it was sent aside)."""
    roots = [home.root / "fake-state", home.root / "avatar-home" / "records"]
    return {
        str(p): p.read_bytes()
        for root in roots
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "requests.jsonl"
    }


def _agent_sessions(home: AgentHome) -> dict[str, list[dict[str, str]]]:
    """The fake agent's own sessions: id → history."""
    found = {}
    for path in (home.root / "fake-state" / "sessions").glob("*.json"):
        session = json.loads(path.read_text())
        found[session["id"]] = session["history"]
    return found


def _listed(avatar: Avatar) -> list[str]:
    return [s["id"] for s in json.loads(avatar("session", "list", "--json").stdout)]


def _one_line(proc_stderr: str, start: str) -> None:
    lines = proc_stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(start), proc_stderr


def _two_turns(avatar: Avatar) -> str:
    sid = avatar.session(avatar("-p", "fake", "chat", "the word is HERON"))[0]
    avatar("chat", "--resume", sid, "and the number is 47")
    return sid


def test_delete_where_the_agent_cannot_changes_nothing(agent_home: AgentHome) -> None:
    avatar = _avatar(agent_home)
    sid = avatar.session(avatar("-p", "fake", "chat", "keep me"))[0]
    before = _disk(agent_home)

    refused = avatar("session", "delete", sid, "--yes", code=1)
    assert refused.stdout == ""
    _one_line(refused.stderr, "avatar: fake cannot delete its sessions: nothing was deleted")
    assert _disk(agent_home) == before
    assert sid in _listed(avatar)

    # Asked for: avatar's record (and its copy of the turns) goes, the agent keeps its own,
    # and the line says both.
    forgot = avatar("session", "delete", sid, "--yes", "--forget").stderr
    assert forgot.startswith(f"forgot fake session {sid}: avatar's record and copy of its turns")
    assert "avatar lists it no more; fake may still hold it in its own store" in forgot
    assert sid not in _listed(avatar)
    assert sid in _agent_sessions(agent_home)
    assert not list((agent_home.root / "avatar-home" / "records" / "turns").rglob(f"{sid}*"))


def test_fork_where_the_agent_cannot_opens_nothing(agent_home: AgentHome) -> None:
    avatar = _avatar(agent_home)
    sid = _two_turns(avatar)
    before = _disk(agent_home)

    refused = avatar("session", "fork", sid, code=1)
    assert refused.stdout == ""
    _one_line(refused.stderr, "avatar: fake cannot fork a session: nothing was opened")
    assert _disk(agent_home) == before
    assert set(_agent_sessions(agent_home)) == {sid}

    # From avatar's copy: a new session that holds the whole history, the agent's too.
    forked = avatar("session", "fork", sid, "--from-copy")
    new = forked.stdout.strip()
    assert forked.stdout == new + "\n" and uuid.UUID(new) and new != sid
    shown = avatar("session", "show", new).stdout
    assert "the word is HERON" in shown and "and the number is 47" in shown
    assert "reply 1 to 'the word is HERON'" in shown
    handed = " ".join(m["text"] for m in _agent_sessions(agent_home)[new])
    assert "the word is HERON" in handed and "and the number is 47" in handed


def test_a_fork_holds_the_whole_history_and_prints_only_its_id(agent_home: AgentHome) -> None:
    avatar = _avatar(agent_home, fork=True, fork_replay=True)
    sid = _two_turns(avatar)

    forked = avatar("session", "fork", sid)
    new = forked.stdout.strip()
    assert forked.stdout == new + "\n" and uuid.UUID(new) and new != sid
    avatar("chat", "--resume", new, "a third thing")
    shown = avatar("session", "show", new).stdout
    for said in ("the word is HERON", "and the number is 47", "a third thing"):
        assert said in shown
    assert "reply 3 to 'a third thing' (history 4)" in shown  # the agent's fork: all of it
    info = json.loads(avatar("session", "info", new, "--json").stdout)
    assert info["parent"] == f"fake/{sid}"


def test_a_cli_fork_works_where_the_repl_s_does(agent_home: AgentHome) -> None:
    """An agent that forks only a session it has open (the REPL's `/fork` has it open): the
    CLI opens it first, as the REPL did, and forks it; `--from-copy` is not needed."""
    avatar = _avatar(agent_home, fork=True, fork_needs_open=True)
    sid = _two_turns(avatar)

    for extra in ((), ("--from-copy",)):
        forked = avatar("session", "fork", sid, *extra)
        new = forked.stdout.strip()
        assert forked.stdout == new + "\n" and new != sid
        assert avatar.session(forked) == (new, "fake", "forked")
        assert new in _agent_sessions(agent_home)  # the agent's own fork, not a seeded copy
        went_on = avatar("chat", "--resume", new, "a third thing").stdout
        assert "(history 4)" in went_on


def test_a_fork_the_agent_refuses_says_what_to_use_instead(agent_home: AgentHome) -> None:
    avatar = _avatar(agent_home, fork=True, fork_error=-32603)
    sid = _two_turns(avatar)
    before = set(_agent_sessions(agent_home))

    refused = avatar("session", "fork", sid, code=1)
    _one_line(refused.stderr, f"avatar: fake could not fork session {sid}")
    assert refused.stderr.rstrip().endswith(
        "(--from-copy starts a new session seeded with its whole history)"
    )
    assert set(_agent_sessions(agent_home)) == before

    copied = avatar("session", "fork", sid, "--from-copy")
    new = copied.stdout.strip()
    assert new not in before and avatar.session(copied)[0] == new
    handed = " ".join(m["text"] for m in _agent_sessions(agent_home)[new])
    assert "the word is HERON" in handed and "and the number is 47" in handed


def test_delete_takes_avatar_s_copy_too_unless_kept(agent_home: AgentHome) -> None:
    avatar = Avatar(agent_home, avatar_env(agent_home))
    first = avatar.session(avatar("-p", "native", "chat", "the first one"))[0]
    second = avatar.session(avatar("-p", "native", "chat", "the second one"))[0]
    turns = agent_home.root / "avatar-home" / "records" / "turns" / "native"
    assert (turns / f"{first}.jsonl").is_file() and (turns / f"{second}.jsonl").is_file()

    avatar("session", "delete", first, "--yes")
    assert not (turns / f"{first}.jsonl").exists()  # not readable from avatar's copy either
    avatar("session", "show", first, code=2)
    avatar("session", "delete", second, "--yes", "--keep-copy")
    assert (turns / f"{second}.jsonl").is_file()
    listed = _listed(avatar)
    assert first not in listed and second not in listed


def test_a_session_whose_files_are_gone_is_still_listed_and_marked(
    agent_home: AgentHome,
) -> None:
    avatar = Avatar(agent_home, avatar_env(agent_home))
    sid = avatar.session(avatar("-p", "native", "chat", "remember the KESTREL"))[0]
    path = json.loads(avatar("session", "info", sid, "--json").stdout)["path"]
    Path(path).unlink()

    [row] = [s for s in json.loads(avatar("session", "list", "--json").stdout) if s["id"] == sid]
    assert row["files_gone"] is True and row["title"] == "remember the KESTREL"
    table = avatar("session", "list").stdout
    assert any(sid in line and "[files gone]" in line for line in table.splitlines()), table
    assert "remember the KESTREL" in avatar("session", "show", sid).stdout


def test_a_session_made_outside_avatar_is_shown_and_handed_over_after_refresh(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    avatar = _avatar(agent_home)
    sid = seed_session(agent_home.root / "fake-state", agent_home.workdir, turns=2)
    listed = avatar("session", "list", "--provider", "fake", "--refresh", "--json").stdout
    assert sid in [s["id"] for s in json.loads(listed)]

    shown = avatar("session", "show", sid).stdout
    for said in ("earlier question 1", "earlier answer 1", "earlier question 2"):
        assert said in shown
    exported = avatar("session", "export", sid, "--format", "md").stdout
    assert "earlier answer 2" in exported
    model_server.script("chat", "Two questions.")
    avatar("-p", "native", "chat", "--from", sid, "how many questions?")
    sent = model_server.requests_for("chat")[-1].all_text()
    assert "earlier question 1" in sent and "earlier question 2" in sent


def test_prune_reports_each_failure_and_goes_on(agent_home: AgentHome) -> None:
    # The agent advertises session/delete but answers it with an error (-32601 here).
    avatar = _avatar(agent_home, delete=True)
    kept = avatar.session(avatar("-p", "native", "chat", "an old native one"))[0]
    refusing = avatar.session(avatar("-p", "fake", "chat", "an old fake one"))[0]

    pruned = avatar("session", "prune", "--older-than", "0d", "--yes", code=1)
    lines = pruned.stderr.splitlines()
    assert lines[0].startswith(f"avatar: fake session {refusing} not deleted: fake did not")
    assert lines[1:] == [f"deleted native session {kept}"]
    assert _listed(avatar) == [refusing]

"""Naming sessions where each provider shows names, and pruning old ones (API and CLI)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from avatar.core.errors import UsageError
from avatar.core.events import SessionStarted
from avatar.engine.engine import Engine
from avatar.engine.status import EngineStatus
from avatar.sessions.claude import ClaudeStore
from tests.library.helpers import Library, make_library
from tests.support.drive import avatar
from tests.support.slash import SlashRepl


@pytest.fixture
def lib(tmp_path: Path) -> Library:
    return make_library(tmp_path, n=2)


def _listed(lib: Library, sid: str) -> dict[str, Any]:
    [row] = [s.to_public() for s in lib.engine().sessions() if s.id == sid]
    return row


def _last_line(path: Path) -> Any:
    return json.loads(path.read_text().splitlines()[-1])


def test_rename_claude_writes_claude_codes_own_entry(lib: Library) -> None:
    sid = lib.claude_session("first words")
    info = lib.engine().rename(sid[:8], "  Parser   rewrite ")
    assert info.name == "Parser rewrite"
    path = lib.claude_dir() / f"{sid}.jsonl"
    # The entry Claude Code's own /rename appends (what `claude --resume` lists).
    assert _last_line(path) == {
        "type": "custom-title",
        "customTitle": "Parser rewrite",
        "sessionId": sid,
    }
    row = _listed(lib, sid)
    assert (row["name"], row["title"]) == ("Parser rewrite", "Parser rewrite")
    # Claude Code's store alone (no avatar records) shows it too.
    store = ClaudeStore("claude", lib.synth.env, lib.root / "fresh-avatar-home")
    [listed] = [s for s in store.list(None) if s.id == sid]
    assert (listed.title, listed.name) == ("Parser rewrite", "Parser rewrite")
    assert [h.session.id for h in lib.engine().search("rewrite")] == [sid]
    # Renamed again inside Claude Code later: its own entry wins.
    with path.open("a") as f:
        f.write(
            json.dumps(
                {"type": "custom-title", "customTitle": "Renamed in Claude", "sessionId": sid}
            )
            + "\n"
        )
    assert _listed(lib, sid)["name"] == "Renamed in Claude"


def test_rename_codex_gemini_native(lib: Library) -> None:
    engine = lib.engine()
    by_provider: dict[str, str] = {}
    for s in engine.sessions():
        by_provider.setdefault(s.provider, s.id)
    native = lib.native_session("native words")
    by_provider["native"] = native
    for provider, sid in by_provider.items():
        lib.engine().rename(sid, f"{provider} named")
    for provider, sid in by_provider.items():
        assert _listed(lib, sid)["name"] == f"{provider} named", provider
    # codex: the thread name codex's own /rename keeps; native: the session's title entry.
    index = Path(lib.synth.codex_home) / "session_index.jsonl"
    assert _last_line(index)["thread_name"] == "codex named"
    assert _listed(lib, by_provider["codex"])["title"] == "codex named"
    assert _listed(lib, native)["title"] == "native named"
    hits = lib.engine().search("named", provider="gemini")
    assert [(h.session.id, h.session.name) for h in hits] == [
        (by_provider["gemini"], "gemini named")
    ]


def test_rename_refuses_an_empty_name(lib: Library) -> None:
    sid = lib.claude_session("words")
    with pytest.raises(UsageError):
        lib.engine().rename(sid, "   ")


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_prune_deletes_exactly_the_old_sessions(lib: Library) -> None:
    fresh = lib.claude_session("fresh words")
    engine = lib.engine()
    old = engine.library.prunable(timedelta(days=1), provider="claude")
    old_ids = {s.id for s in old}
    assert len(old) == 2 and fresh not in old_ids  # the two fixture transcripts (Nov 21)
    before = _tree(lib.synth.home)
    done = asyncio.run(engine.library.prune(old))
    assert [d.done if not isinstance(d, str) else d for _, d in done] == ["deleted", "deleted"]
    gone = before - _tree(lib.synth.home)
    assert gone == {
        str((lib.claude_dir() / f"{sid}.jsonl").relative_to(lib.synth.home)) for sid in old_ids
    }


def _avatar(lib: Library, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **lib.synth.env,
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "AVATAR_HOME": str(lib.avatar_home),
        "AVATAR_CONFIG": str(lib.root / "no-config.yaml"),
    }
    return avatar(env, lib.cwd, *args)


def test_cli_search_rename_and_prune(lib: Library) -> None:
    sid = lib.claude_session("the pangolin report")
    p = _avatar(lib, "session", "search", "pangolin", "--json")
    assert p.returncode == 0, p.stderr
    [hit] = json.loads(p.stdout)
    assert set(hit) == {"id", "provider", "title", "cwd", "updated", "snippet"}
    assert (hit["id"], hit["provider"]) == (sid, "claude")
    assert "pangolin" in hit["snippet"] and "\x1b" not in hit["snippet"]
    table = _avatar(lib, "session", "search", "pangolin")
    assert table.returncode == 0 and sid in table.stdout and "\x1b[" not in table.stdout
    assert _avatar(lib, "session", "search", "pangolin", "--since", "soon").returncode == 2

    p = _avatar(lib, "session", "rename", sid[:8], "Pangolin", "study")
    assert p.returncode == 0, p.stderr
    listing = _avatar(lib, "session", "list")
    assert "Pangolin study" in listing.stdout
    [row] = [
        r for r in json.loads(_avatar(lib, "session", "list", "--json").stdout) if r["id"] == sid
    ]
    assert row["name"] == "Pangolin study"

    before = _tree(lib.synth.home)
    no_tty = _avatar(lib, "session", "prune", "--older-than", "1d")
    assert no_tty.returncode == 2 and no_tty.stderr.startswith("avatar: "), no_tty.stderr
    assert _avatar(lib, "session", "prune", "--older-than", "forever").returncode == 2
    dry = _avatar(
        lib, "session", "prune", "--older-than", "1d", "--provider", "claude", "--dry-run"
    )
    assert dry.returncode == 0, dry.stderr
    listed = [line.split()[1] for line in dry.stdout.splitlines()]
    assert len(listed) == 2 and sid not in listed
    assert _tree(lib.synth.home) == before  # a dry run deletes nothing
    yes = _avatar(lib, "session", "prune", "--older-than", "1d", "--provider", "claude", "--yes")
    assert yes.returncode == 0, yes.stderr
    assert before - _tree(lib.synth.home) == {
        str((lib.claude_dir() / f"{x}.jsonl").relative_to(lib.synth.home)) for x in listed
    }
    assert _tree(lib.synth.home) <= before
    assert os.path.exists(lib.claude_dir() / f"{sid}.jsonl")


class _OpenOn:
    """The engine with session `opened` open, as `/rename` sees it (no agent started)."""

    def __init__(self, engine: Engine, opened: SessionStarted) -> None:
        self.engine, self.opened = engine, opened

    def status(self) -> EngineStatus:
        o = self.opened
        return EngineStatus(provider=o.provider, model=None, session_id=o.session_id, how=o.how)

    def rename(self, ref: str, name: str) -> object:
        return self.engine.rename(ref, name)


def test_slash_search_and_rename(lib: Library) -> None:
    from avatar.cli.repl.slash import lookup
    from avatar.core.events import SessionStarted

    sid = lib.claude_session("the tapir migration")
    repl = SlashRepl(lib.engine())
    search, rename = lookup("/search"), lookup("/rename")
    assert search is not None and rename is not None
    asyncio.run(search.handler(repl, ["tapir"]))  # type: ignore[arg-type]
    assert sid in repl.lines[0] and "tapir" in repl.lines[1]
    asyncio.run(rename.handler(repl, ["Tapir", "plan"]))  # type: ignore[arg-type]
    assert repl.lines[-1].startswith("usage:")  # no session open yet
    opened = SessionStarted(session_id=sid, provider="claude", how="resumed")
    repl.engine = _OpenOn(repl.engine, opened)  # type: ignore[assignment]
    asyncio.run(rename.handler(repl, ["Tapir", "plan"]))  # type: ignore[arg-type]
    assert repl.lines[-1] == "renamed: Tapir plan"
    assert _listed(lib, sid)["name"] == "Tapir plan"


def test_search_at_a_terminal_shows_the_match_in_bold(lib: Library) -> None:
    import pexpect

    sid = lib.claude_session("where is the jackalope")
    env = {
        **lib.synth.env,
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "AVATAR_HOME": str(lib.avatar_home),
        "AVATAR_CONFIG": str(lib.root / "no-config.yaml"),
        "TERM": "xterm",
    }
    child = pexpect.spawn(
        "avatar", ["session", "search", "jackalope"], env=env, cwd=str(lib.cwd), timeout=60
    )
    out = child.read().decode()
    child.close()
    assert child.exitstatus == 0, out
    assert sid in out and "\x1b[1mjackalope\x1b[22m" in out


def test_the_picker_shows_the_name(lib: Library) -> None:
    from avatar.cli.repl.picker import row

    sid = lib.claude_session("unnamed words")
    info = lib.engine().rename(sid, "Picker name")
    assert "Picker name" in row(info)

"""Search finds what was said (issue 22): a phrase, a code token and a word only in a tool's
output each find exactly the sessions `grep -F` finds over the same session files; results
come a page at a time; a long first build says how far it is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from avatar.library.search.hits import SearchHit
from tests.library.helpers import Library, make_library
from tests.sessions.synth import populate
from tests.support.drive import avatar


@pytest.fixture
def lib(tmp_path: Path) -> Library:
    return make_library(tmp_path, n=2)


def _ids(hits: list[SearchHit]) -> set[str]:
    return {h.session.id for h in hits}


def _say(path: Path, text: str) -> None:
    """The fixture's answer in a codex or Gemini file replaced by `text`, in that format."""
    data = path.read_bytes()
    assert b"Hello from the fake LLM." in data
    path.write_bytes(data.replace(b"Hello from the fake LLM.", text.encode()))


def _grep(lib: Library, needle: str) -> set[str]:
    """The ids of the sessions whose files `grep -F` finds `needle` in."""
    dirs = [str(lib.synth.home), str(lib.avatar_home / "sessions")]
    out = subprocess.run(
        ["grep", "-rlF", "--", needle, *dirs], capture_output=True, text=True, check=False
    ).stdout.split()
    by_path = {s.path: s.id for s in lib.engine().sessions(any_cwd=True)}
    return {by_path[p] for p in out if p in by_path}


def test_a_phrase_a_code_token_and_tool_output_find_what_grep_finds(lib: Library) -> None:
    lib.claude_session("the zebra quokka met at noon")
    lib.claude_session("a zebra and then a quokka")  # the words, apart
    lib.claude_session("now call foo_bar() twice")
    lib.claude_session("the foo is a bar")  # the code token's words, apart
    lib.claude_session("foo_bar without its parentheses")
    lib.claude_session("look at the logs", tool_output="2026 wombatlog rotated\n")
    lib.claude_session("the wombat log, in words")
    lib.native_session("a native zebra quokka, and foo_bar() too")
    codex = sorted((lib.synth.codex_home / "sessions").rglob("rollout-*.jsonl"))
    gemini = sorted((lib.synth.home / ".gemini").rglob("session-*.jsonl"))
    _say(codex[0], "zebra quokka: see foo_bar() in codex")
    _say(codex[1], "zebra, quokka")
    _say(gemini[0], "gemini calls foo_bar() and the zebra quokka")
    engine = lib.engine()
    for query, needle in (
        ('"zebra quokka"', "zebra quokka"),
        ("foo_bar()", "foo_bar()"),
        ("wombatlog", "wombatlog"),
    ):
        grep = _grep(lib, needle)
        assert grep, needle
        assert _ids(engine.search(query, limit=100)) == grep, query
    # The snippet shows the phrase and marks it whole.
    [hit] = [h for h in engine.search("wombatlog") if h.session.provider == "claude"]
    assert [hit.snippet[a:b] for a, b in hit.spans] == ["wombatlog"]
    marked = {h.snippet[a:b] for h in engine.search('"zebra quokka"') for a, b in h.spans}
    assert marked == {"zebra quokka"}


def test_tool_output_is_masked_in_the_index(tmp_path: Path) -> None:
    key = "sk-proj-SECRETVALUE0123456789abcdefXYZ"
    lib = make_library(tmp_path, n=1, secrets={"OPENAI_API_KEY": key})
    sid = lib.claude_session("read the env", tool_output=f"OPENAI_API_KEY={key} for the kudu")
    [hit] = lib.engine().search("kudu")
    assert hit.session.id == sid and key not in hit.snippet
    data = b"".join(p.read_bytes() for p in (lib.avatar_home / "cache").glob("search.sqlite*"))
    assert b"kudu" in data and b"SECRETVALUE" not in data


def test_results_come_a_page_at_a_time(lib: Library) -> None:
    ids = [lib.claude_session(f"ibex note {'ibex ' * n}") for n in range(5)]
    engine = lib.engine()
    every = [h.session.id for h in engine.search("ibex")]
    assert sorted(every) == sorted(ids)
    assert [h.session.id for h in engine.search("ibex", limit=2, offset=1)] == every[1:3]
    cli = _cli(lib, "session", "search", "ibex", "--json", "--limit", "2", "--offset", "3")
    assert cli.returncode == 0, cli.stderr
    assert [h["id"] for h in json.loads(cli.stdout)] == every[3:5]
    bad = _cli(lib, "session", "search", "ibex", "--limit", "0")
    assert bad.returncode == 2 and "--limit" in bad.stderr


def _env(lib: Library) -> dict[str, str]:
    return {
        **lib.synth.env,
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "AVATAR_HOME": str(lib.avatar_home),
        "AVATAR_CONFIG": str(lib.root / "no-config.yaml"),
    }


def _cli(lib: Library, *args: str) -> subprocess.CompletedProcess[str]:
    return avatar(_env(lib), lib.cwd, *args)


#: `avatar` with a first build reporting its progress at once (PROGRESS_AFTER = 0).
AT_ONCE = "; ".join(
    (
        "import avatar.library.search.index as index",
        "index.PROGRESS_AFTER = 0.0",
        "import avatar.cli",
        "avatar.cli.main()",
    )
)


def test_a_long_first_build_shows_its_progress(tmp_path: Path) -> None:
    # A first build that runs longer than PROGRESS_AFTER (1 s) says how far it is. The command
    # runs here with that threshold at zero, so that how long the build really takes on this
    # machine decides nothing: every 32 sessions it reports, then once at the end.
    cwd = tmp_path / "proj"
    cwd.mkdir()
    synth = populate(tmp_path, 50, cwd=str(cwd))
    lib = Library(root=tmp_path, synth=synth, secrets={})
    first = subprocess.run(
        [sys.executable, "-c", AT_ONCE, "session", "search", "hello", "--limit", "1"],
        env=_env(lib),
        cwd=lib.cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines() == [
        f"indexing sessions for search: {n} of 150" for n in (32, 64, 96, 128, 150)
    ]
    assert first.stdout.count("\n") == 2  # the one hit: its line and its snippet
    again = _cli(lib, "session", "search", "hello", "--limit", "1")
    assert again.returncode == 0 and again.stderr == "" and again.stdout == first.stdout

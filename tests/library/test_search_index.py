"""The search index: built from every store, kept up to date by stamps, a cache only."""

from __future__ import annotations

import sqlite3
import threading
from datetime import timedelta
from pathlib import Path

import pytest

from avatar.core.errors import UsageError
from avatar.library.search.index import FILE_NAME, SCHEMA_VERSION, SearchHit
from avatar.library.search.query import Query, parse
from tests.library.helpers import Library, make_library

KEY = "sk-proj-SECRETVALUE0123456789abcdefXYZ"
SHAPED = "sk-ant-api03-SHAPEDKEY0123456789abcdefghijk"


@pytest.fixture
def lib(tmp_path: Path) -> Library:
    return make_library(tmp_path, n=2, secrets={"OPENAI_API_KEY": KEY})


def _ids(hits: list[SearchHit]) -> set[str]:
    return {h.session.id for h in hits}


def test_every_provider_is_found_and_only_changed_sessions_are_reindexed(lib: Library) -> None:
    claude = lib.claude_session("please refactor the quokka parser")
    native = lib.native_session("the wombat migration plan")
    engine = lib.engine()
    assert engine.library.reindex() == 2 * 3 + 2  # 2 per fixture provider, plus ours
    assert engine.library.reindex() == 0  # nothing changed: nothing is read again
    [hit] = engine.search("quokka")
    assert (hit.session.provider, hit.session.id) == ("claude", claude)
    assert [hit.snippet[a:b] for a, b in hit.spans] == ["quokka"]
    assert [h.session.id for h in engine.search("wombat")] == [native]
    gemini = engine.search("hello", provider="gemini")
    assert len(gemini) == 2 and {h.session.provider for h in gemini} == {"gemini"}
    assert {h.session.provider for h in engine.search("hello")} >= {"codex", "gemini"}

    # One session changes: only it is read again, and its new words are found.
    path = lib.claude_dir() / f"{claude}.jsonl"
    with path.open("a") as f:
        f.write(path.read_text().splitlines()[0].replace("quokka parser", "platypus") + "\n")
    assert lib.engine().library.reindex() == 1
    assert _ids(lib.engine().search("platypus")) == {claude}


def test_a_deleted_session_disappears(lib: Library) -> None:
    gone = lib.claude_session("ephemeral axolotl notes")
    engine = lib.engine()
    assert _ids(engine.search("axolotl")) == {gone}
    (lib.claude_dir() / f"{gone}.jsonl").unlink()
    assert engine.search("axolotl") == []
    assert engine.library.reindex() == 0


def test_tool_titles_and_tool_output_are_indexed(lib: Library) -> None:
    sid = lib.claude_session("look around", tool_output="narwhalonlyinoutput")
    engine = lib.engine()
    assert _ids(engine.search("narwhalonlyinoutput")) == {sid}
    assert sid in _ids(engine.search("Bash list the files"))


def test_secrets_never_reach_the_index_file(lib: Library) -> None:
    sid = lib.claude_session(f"my key is {KEY} and the other {SHAPED} for the ocelot")
    engine = lib.engine()
    [hit] = engine.search("ocelot")
    assert hit.session.id == sid
    assert KEY not in hit.snippet and "[redacted]" in hit.snippet
    data = b"".join(p.read_bytes() for p in (lib.avatar_home / "cache").glob(f"{FILE_NAME}*"))
    assert b"ocelot" in data
    assert KEY.encode() not in data and SHAPED.encode() not in data
    assert b"SECRETVALUE" not in data and b"SHAPEDKEY" not in data


def test_an_index_of_another_version_or_corrupt_is_rebuilt(lib: Library) -> None:
    lib.claude_session("the capybara index")
    engine = lib.engine()
    total = engine.library.reindex()
    db_path = lib.avatar_home / "cache" / FILE_NAME
    with sqlite3.connect(db_path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    assert engine.library.reindex() == total
    with sqlite3.connect(db_path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.close()
    db_path.write_bytes(b"this is not a database at all" * 100)
    assert len(engine.search("capybara")) == 1
    db_path.unlink()
    assert len(engine.search("capybara")) == 1


def test_filters_project_provider_and_age(lib: Library, tmp_path: Path) -> None:
    old = lib.claude_session("ancient gecko", when="2020-01-02T03:04:05Z")
    new = lib.claude_session("recent gecko")
    engine = lib.engine()
    assert _ids(engine.search("gecko")) == {old, new}
    assert _ids(engine.search("gecko", since=timedelta(days=7))) == {new}
    assert engine.search("gecko", provider="codex") == []
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert lib.engine(elsewhere).search("gecko") == []
    assert _ids(lib.engine(elsewhere).search("gecko", all_projects=True)) == {old, new}
    # Best match first: the session saying it twice ranks above the one saying it once.
    twice = lib.claude_session("gecko gecko gecko everywhere gecko")
    assert engine.search("gecko")[0].session.id == twice


def test_queries_are_words_never_syntax(lib: Library) -> None:
    lib.claude_session("fix the parser: it's broken (again) AND/OR NEAR")
    engine = lib.engine()
    assert len(engine.search('"broken" AND (again')) == 1
    assert len(engine.search("pars")) == 1  # a word's start matches
    with pytest.raises(UsageError):
        engine.search("  ***  ")
    assert parse("a-b fix") == Query(("fix",), ("a-b",))  # a code token is kept whole
    assert parse('x "a." c') == Query(("x", "a", "c"), ())  # too short for trigrams
    with pytest.raises(UsageError, match="nothing to search for"):
        parse("__")  # the index has no word in it: it would quietly match nothing


def test_damage_past_the_header_is_rebuilt(lib: Library) -> None:
    lib.claude_session("the damaged okapi")
    engine = lib.engine()
    engine.library.reindex()
    db_path = lib.avatar_home / "cache" / FILE_NAME
    data = bytearray(db_path.read_bytes())
    data[4096:] = b"\xff" * (len(data) - 4096)  # every page after the first
    db_path.write_bytes(bytes(data))
    assert len(engine.search("okapi")) == 1


def test_concurrent_updates_do_not_fail(lib: Library) -> None:
    for i in range(20):
        lib.claude_session(f"concurrent ibis number {i}")
    results: list[object] = []

    def index() -> None:
        try:
            results.append(lib.engine().library.reindex())
        except Exception as e:  # reported below, with what it was
            results.append(e)

    threads = [threading.Thread(target=index) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(isinstance(r, int) for r in results), results
    assert len(lib.engine().search("ibis")) == 20


def test_without_a_writable_cache_search_still_answers(lib: Library) -> None:
    lib.claude_session("the homeless quetzal")
    lib.avatar_home.mkdir(parents=True, exist_ok=True)
    (lib.avatar_home / "cache").write_text("a file where the cache directory should be")
    assert len(lib.engine().search("quetzal")) == 1

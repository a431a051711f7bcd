"""Fuzzing the search index: any session text is indexed, any query is answered or refused.

Native sessions holding arbitrary text (FTS5 syntax characters, NUL, lone surrogates, the
index's own snippet markers, huge strings) are written through the native store and indexed by
`engine.library.reindex()`; arbitrary queries then go through `Engine.search()`, the path
`avatar session search` takes. Indexing never raises; a search returns hits or one clear
`UsageError` (a query with no word in it), never an sqlite error. A session whose text holds a
query's words is found.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from avatar.core.config import Settings
from avatar.core.errors import UsageError
from avatar.engine.engine import Engine
from avatar.native.store.entries import MessageEntry
from avatar.native.store.manager import SessionManager

#: Characters FTS5 (and the index's snippet markers) give a meaning to.
SYNTAX = st.sampled_from(
    ['"', "*", "^", ":", "(", ")", "-", "+", "NEAR", "AND", "OR", "NOT", "\x00", "\x02", "\x03"]
)
#: Text with syntax characters, NUL, lone surrogates and words mixed in.
TEXT = st.lists(
    SYNTAX | st.text(max_size=12) | st.sampled_from(["\ud800", "\udfff", "ledger", "wörd"]),
    max_size=12,
).map("".join)


_SURROGATE = re.compile("[\ud800-\udfff]")
_MARK = re.compile(rb"SURR([0-9a-f]{4})END")


def _engine(root: Path, texts: list[str], extra: str = "") -> Engine:
    cwd = root / "proj"
    cwd.mkdir()
    home = root / "avatar-home"
    manager = SessionManager(home)
    for text in texts:
        # A lone surrogate reaches the index as a JSON escape (`"\ud800"`) any provider's file
        # may hold; the writer cannot encode one, so it is spliced into the file as that escape.
        text = _SURROGATE.sub(lambda m: f"SURR{ord(m.group()):04x}END", text)
        _, writer = manager.create(cwd, model="openai/fuzz")
        try:
            writer.add(MessageEntry(role="user", text=text))
            writer.add(MessageEntry(role="assistant", text=text[::-1]))
            if extra:
                writer.add(MessageEntry(role="user", text=extra))
        finally:
            writer.close()
        data = writer.path.read_bytes()
        writer.path.write_bytes(_MARK.sub(rb"\\u\1", data))
    env = {"HOME": str(root), "AVATAR_HOME": str(home), "PATH": "/usr/bin:/bin"}
    return Engine(Settings(), cwd, env=env, home=home)


def _search(engine: Engine, query: str) -> list[object]:
    try:
        return list(engine.search(query))
    except UsageError as e:
        assert "\n" not in str(e)
        assert not re.findall(r"[^\W_]+", query), f"refused a query with words in it: {e}"
        return []


@given(texts=st.lists(TEXT, min_size=1, max_size=3), queries=st.lists(TEXT, max_size=4))
def test_fuzz_search_arbitrary_text_and_queries(texts: list[str], queries: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        engine = _engine(Path(tmp), texts)
        assert engine.library.reindex() == len(texts)
        for query in [*queries, *texts]:
            _search(engine, query)


@given(word=st.from_regex(r"[a-z]{3,12}", fullmatch=True), noise=TEXT)
def test_fuzz_search_finds_a_word_among_noise(word: str, noise: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        # The native reader drops a message it cannot decode (a lone surrogate), so the word
        # also comes in a message of its own.
        engine = _engine(Path(tmp), [f"{noise} {word} {noise}"], extra=f"{word} and more")
        engine.library.reindex()
        assert len(_search(engine, word)) == 1


def test_search_huge_text_and_query() -> None:
    # 2 MB of FTS syntax and NUL around one word.
    huge = ('\x00 "( NEAR* ^: ' * 200_000)[:2_000_000] + " ledger"
    with tempfile.TemporaryDirectory() as tmp:
        engine = _engine(Path(tmp), [huge])
        assert engine.library.reindex() == 1
        assert len(_search(engine, "ledger")) == 1
        _search(engine, "x" * 100_000 + " ledger " * 1000)


@given(text=TEXT)
def test_fuzz_search_provider_files_with_any_text(text: str) -> None:
    """Claude Code, codex and Gemini CLI files whose messages hold arbitrary text (as JSON
    escapes, lone surrogates included: their readers pass those on) are indexed and found."""
    from tests.sessions.synth import populate

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cwd = root / "proj"
        cwd.mkdir()
        synth = populate(root, 1, cwd=str(cwd))
        escaped = json.dumps(text)[1:-1].encode()  # ASCII: every odd character escaped
        for path in synth.home.rglob("*.json*"):
            path.write_bytes(path.read_bytes().replace(b"Hello", escaped + b" Hello"))
        home = root / "avatar-home"
        env = {**synth.env, "AVATAR_HOME": str(home), "PATH": "/usr/bin:/bin"}
        engine = Engine(Settings(), cwd, env=env, home=home)
        assert engine.library.reindex() == 3
        assert len(_search(engine, "hello")) == 3
        _search(engine, text)


def test_a_session_repeating_the_word_is_searched() -> None:
    """2 MB repeating the query word: FTS5's own snippet() weighed every hit against every
    other (two minutes); avatar's piece looks at a bounded number of them (its growth with
    the session's size: `python -m benchmarks --only linear`)."""
    with tempfile.TemporaryDirectory() as tmp:
        engine = _engine(Path(tmp), ["ledger entry " * 150_000])
        assert engine.library.reindex() == 1
        [hit] = engine.search("ledger")
        assert hit.snippet.startswith("ledger entry ledger") and len(hit.spans) == 6

"""The size/mtime-keyed listing cache."""

from __future__ import annotations

import json
import os
from pathlib import Path

from avatar.sessions.cache import CACHE_VERSION, ListingCache


def _stat(p: Path) -> os.stat_result:
    return p.stat()


def test_roundtrip_and_invalidation(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_text("one\n")
    cache_file = tmp_path / "cache" / "c.json"
    cache = ListingCache(cache_file)
    assert cache.get(str(f), _stat(f)) is None
    cache.put(str(f), _stat(f), {"x": 1})
    cache.save()
    assert json.loads(cache_file.read_text())["version"] == CACHE_VERSION

    again = ListingCache(cache_file)
    assert again.get(str(f), _stat(f)) == {"x": 1}
    with f.open("a") as fh:  # an append changes size and mtime
        fh.write("two\n")
    assert again.get(str(f), _stat(f)) is None


def test_corrupt_or_old_cache_is_ignored(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_text("x")
    cache_file = tmp_path / "c.json"
    for content in ("{not json", "[]", json.dumps({"version": -1, "entries": {}})):
        cache_file.write_text(content)
        assert ListingCache(cache_file).get(str(f), _stat(f)) is None
    entry = {"size": f.stat().st_size, "mtime_ns": f.stat().st_mtime_ns, "summary": "nope"}
    cache_file.write_text(json.dumps({"version": CACHE_VERSION, "entries": {str(f): entry}}))
    assert ListingCache(cache_file).get(str(f), _stat(f)) is None


def test_prune_forget_and_no_write_when_clean(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    a, b = root / "a", root / "b"
    a.write_text("a")
    b.write_text("b")
    cache_file = tmp_path / "c.json"
    cache = ListingCache(cache_file)
    cache.put(str(a), _stat(a), {"n": "a"})
    cache.put(str(b), _stat(b), {"n": "b"})
    cache.save()

    later = ListingCache(cache_file)
    assert later.get(str(a), _stat(a)) == {"n": "a"}
    later.prune(str(root))  # b was not seen: dropped
    later.save()
    entries = json.loads(cache_file.read_text())["entries"]
    assert list(entries) == [str(a)]

    cache_file.write_text(cache_file.read_text())
    before = cache_file.stat().st_mtime_ns
    clean = ListingCache(cache_file)
    clean.get(str(a), _stat(a))
    clean.save()  # nothing changed: nothing written
    assert cache_file.stat().st_mtime_ns == before

    clean.forget(str(a))
    clean.save()
    assert json.loads(cache_file.read_text())["entries"] == {}


def test_unwritable_cache_dir_is_harmless(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_text("x")
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    cache = ListingCache(blocker / "c.json")
    cache.put(str(f), _stat(f), {})
    cache.save()  # cannot create a directory under a file: silently skipped
    assert ListingCache(None).get(str(f), _stat(f)) is None

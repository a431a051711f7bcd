"""Fuzzing archive import: any bytes, any tar, any manifest → a restored session or one clear
error, and nothing written outside `$AVATAR_HOME` and the provider stores.

A real archive is packed from a native session (`engine.library.archives.pack`), then
damaged: arbitrary bytes, cut or flipped bytes, a tar.gz of arbitrary members, and the manifest
replaced by arbitrary JSON or one value of it replaced. `engine.library.archives.restore` (what
`avatar session import` calls) must succeed or raise one `AvatarError` with a one-line message;
on an error nothing is written.
"""

from __future__ import annotations

import io
import json
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from avatar.core.config import Settings
from avatar.core.errors import AvatarError
from avatar.engine.engine import Engine
from avatar.native.store.entries import MessageEntry
from avatar.native.store.manager import SessionManager
from tests.hardening.fuzzing import JSON, _paths, _replace


@contextmanager
def _place() -> Iterator[tuple[Path, Engine, dict[str, bytes]]]:
    """A project with one packed native session; the engine restores into a fresh home."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cwd = root / "proj"
        cwd.mkdir()
        source = root / "source-home"
        _, writer = SessionManager(source).create(cwd, model="openai/fuzz")
        try:
            writer.add(MessageEntry(role="user", text="pack me"))
        finally:
            writer.close()
        env = {"HOME": str(root / "home"), "PATH": "/usr/bin:/bin"}
        packer = Engine(Settings(), cwd, env={**env, "AVATAR_HOME": str(source)}, home=source)
        packed = packer.library.archives.pack(packer.sessions()[0].id, root / "good.tar.gz")
        with tarfile.open(packed, "r:gz") as tar:
            members = {m.name: tar.extractfile(m).read() for m in tar if m.isreg()}  # type: ignore[union-attr]
        packed.unlink()
        home = root / "avatar-home"
        yield (
            root,
            Engine(Settings(), cwd, env={**env, "AVATAR_HOME": str(home)}, home=home),
            members,
        )


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def _restore(root: Path, engine: Engine, data: bytes) -> None:
    archive = root / "in.tar.gz"
    archive.write_bytes(data)
    before = _files(root)
    try:
        engine.library.archives.restore(archive, root / "proj")
    except AvatarError as e:
        assert str(e) and "\n" not in str(e), repr(e)
        assert _files(root) - before <= {p for p in _files(root) if "cache" in p.parts}
        return
    new = _files(root) - before
    allowed = (root / "avatar-home", root / "home")
    assert all(p.is_relative_to(allowed[0]) or p.is_relative_to(allowed[1]) for p in new), new


def _tar(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_the_untouched_archive_restores() -> None:
    with _place() as (root, engine, members):
        _restore(root, engine, _tar(members))
        assert [s.title or "" for s in engine.sessions()] != []


@given(data=st.binary(max_size=400))
def test_fuzz_archive_arbitrary_bytes(data: bytes) -> None:
    with _place() as (root, engine, _):
        _restore(root, engine, data)


@given(data=st.data())
def test_fuzz_archive_damaged_bytes(data: st.DataObject) -> None:
    with _place() as (root, engine, members):
        raw = bytearray(_tar(members))
        for _ in range(data.draw(st.integers(1, 4))):
            # Positions as fractions: the packed archive's length varies (fresh ids, times).
            at = int(data.draw(st.floats(0, 1)) * (len(raw) - 1))
            raw[at] = data.draw(st.integers(0, 255))
        cut = int(data.draw(st.floats(0, 1)) * len(raw))
        _restore(root, engine, bytes(raw[:cut]))


NAMES = st.sampled_from(
    [
        "manifest.json",
        "session/x.jsonl",
        "records/turns.jsonl",
        "../evil",
        "/abs",
        "a/../../b",
        "session/../../escape",
        "session/",
        "other",
        "session/a\\b",
        "records/settings.json",
    ]
) | st.text(max_size=20)


@given(members=st.dictionaries(NAMES, st.binary(max_size=60), max_size=4))
def test_fuzz_archive_arbitrary_members(members: dict[str, bytes]) -> None:
    with _place() as (root, engine, _):
        _restore(root, engine, _tar({k: v for k, v in members.items() if k and "\x00" not in k}))


@given(data=st.data())
def test_fuzz_archive_manifest(data: st.DataObject) -> None:
    with _place() as (root, engine, members):
        manifest: Any = json.loads(members["manifest.json"])
        if data.draw(st.booleans()):
            manifest = data.draw(JSON)
        else:
            path = data.draw(st.sampled_from(_paths(manifest)[1:]))
            manifest = _replace(manifest, path, data.draw(JSON))
        _restore(root, engine, _tar({**members, "manifest.json": json.dumps(manifest).encode()}))

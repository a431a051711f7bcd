"""Archives, both ways, leave the file system as it should be.

Import: an archive that expands too far (in all, or against its own size) is refused before a
byte of it lands anywhere; one refused for any reason leaves nothing behind, because members
are staged in a temporary directory and the files move into place only when all is well.
Export: `--archive PATH` writes beside PATH and renames, never through a symlink, FIFO or
device; archives and `-o FILE` exports are readable by their owner only.
"""

from __future__ import annotations

import json
import os
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from avatar.native.store.entries import MessageEntry, SessionHeader
from avatar.native.store.writer import model_line
from tests.support.drive import SESSION_LINE, avatar
from tests.support.homes import AgentHome
from tests.support.model_server import FakeModelServer

pytestmark = pytest.mark.timeout(120)

SID = "01JAAAAAAAAAAAAAAAAAAAAAAA"
MIB = 1 << 20


class _Padded:
    """`head`, then zeros up to `size` bytes, read as a file: a bomb is built without ever
    holding it."""

    def __init__(self, head: bytes, size: int) -> None:
        self.head, self.left = head, size

    def read(self, n: int) -> bytes:
        n = min(n, self.left)
        out, self.head = self.head[:n], self.head[n:]
        self.left -= n
        return out + bytes(n - len(out))


def _session(padding: int = 0) -> tuple[bytes, int]:
    """A native session file (its head, then `padding` zero bytes in a last line)."""
    head = model_line(SessionHeader(id=SID, cwd="/elsewhere", model="openai/gpt-4o"))
    head += model_line(MessageEntry(role="user", text="packed"))
    return head, len(head) + padding


def _bomb(path: Path, members: dict[str, bytes | tuple[bytes, int]]) -> Path:
    """A tar.gz of `members`: bytes, or (head, size): head then zeros up to size."""
    with tarfile.open(path, "w:gz", compresslevel=9) as tar:
        for name, data in members.items():
            head, size = data if isinstance(data, tuple) else (data, len(data))
            info = tarfile.TarInfo(name)
            info.size = size
            tar.addfile(info, _Padded(head, size))  # type: ignore[arg-type]
    return path


MANIFEST = json.dumps(
    {
        "format": 1,
        "kind": "native",
        "provider": "native",
        "cwd": "/elsewhere",
        "session": {"id": SID},
    }
).encode()


def _snapshot(*roots: Path) -> Iterator[tuple[str, int]]:
    for root in roots:
        for p in sorted(root.rglob("*")):
            if "cache" not in p.parts:
                yield str(p), p.lstat().st_size


@pytest.mark.parametrize(
    ("size", "message"),
    [
        (300 * MIB, "expands to over 256 MiB"),  # the total limit (from the tar header)
        (40 * MIB, "expands over 200 times its size"),  # the ratio limit
    ],
    ids=["total", "ratio"],
)
def test_an_archive_that_expands_too_far_is_refused_and_leaves_nothing(
    avatar_env: dict[str, str], agent_home: AgentHome, tmp_path: Path, size: int, message: str
) -> None:
    head, _ = _session()
    archive = _bomb(
        tmp_path / "bomb.tar.gz", {"manifest.json": MANIFEST, f"session/{SID}.jsonl": (head, size)}
    )
    assert archive.stat().st_size < size / 200
    roots = (Path(avatar_env["AVATAR_HOME"]), agent_home.home, agent_home.workdir)
    for root in roots:
        root.mkdir(parents=True, exist_ok=True)
    before = list(_snapshot(*roots))
    out = avatar(avatar_env, agent_home.workdir, "session", "import", str(archive))
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith("avatar: ") and message in out.stderr, out.stderr
    assert list(_snapshot(*roots)) == before


def test_an_archive_refused_after_its_session_file_was_placed_leaves_nothing(
    avatar_env: dict[str, str], agent_home: AgentHome, tmp_path: Path
) -> None:
    """The settings record is checked last: the session file must not stay behind."""
    head, _ = _session()
    archive = _bomb(
        tmp_path / "late.tar.gz",
        {
            "manifest.json": MANIFEST,
            f"session/{SID}.jsonl": head,
            "records/settings.json": b"{damaged",
        },
    )
    roots = (Path(avatar_env["AVATAR_HOME"]), agent_home.home)
    for root in roots:
        root.mkdir(parents=True, exist_ok=True)
    before = list(_snapshot(*roots))
    out = avatar(avatar_env, agent_home.workdir, "session", "import", str(archive))
    assert (out.returncode, out.stderr) == (
        2,
        "avatar: the archive's records/settings.json is damaged\n",
    )
    assert list(_snapshot(*roots)) == before
    fine = _bomb(
        tmp_path / "fine.tar.gz", {"manifest.json": MANIFEST, f"session/{SID}.jsonl": head}
    )
    done = avatar(avatar_env, agent_home.workdir, "session", "import", str(fine))
    assert (done.returncode, done.stdout) == (0, SID + "\n"), done.stderr


@pytest.fixture
def session_id(
    avatar_env: dict[str, str], agent_home: AgentHome, model_server: FakeModelServer
) -> str:
    made = avatar(avatar_env, agent_home.workdir, "-p", "native", "chat", "hello")
    found = SESSION_LINE.search(made.stderr)
    assert found is not None, made.stderr
    return found.group(1)


def test_exports_and_archives_are_written_owner_only_and_whole(
    avatar_env: dict[str, str], agent_home: AgentHome, tmp_path: Path, session_id: str
) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    archive, text = out_dir / "s.tar.gz", out_dir / "s.md"
    packed = avatar(
        avatar_env, agent_home.workdir, "session", "export", session_id, "--archive", str(archive)
    )
    assert packed.returncode == 0, packed.stderr
    exported = avatar(
        avatar_env, agent_home.workdir, "session", "export", session_id, "-o", str(text)
    )
    assert exported.returncode == 0, exported.stderr
    text.chmod(0o644)  # an existing file is replaced by one the owner alone reads, too
    again = avatar(avatar_env, agent_home.workdir, "session", "export", session_id, "-o", str(text))
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in out_dir.iterdir()) == ["s.md", "s.tar.gz"]  # no temp file
    for path in (archive, text):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert "hello" in text.read_text()


@pytest.mark.parametrize("kind", ["symlink", "fifo", "dangling symlink"])
def test_an_archive_target_that_is_not_a_regular_file_is_refused(
    avatar_env: dict[str, str], agent_home: AgentHome, tmp_path: Path, session_id: str, kind: str
) -> None:
    target, victim = tmp_path / "target.tar.gz", tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to(victim if kind == "symlink" else tmp_path / "nowhere")
    out = avatar(
        avatar_env, agent_home.workdir, "session", "export", session_id, "--archive", str(target)
    )
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith(f"avatar: {target} exists and is not a regular file"), out.stderr
    assert target.is_fifo() if kind == "fifo" else target.is_symlink()
    assert victim.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["target.tar.gz", "victim.txt", "agent"]
    )

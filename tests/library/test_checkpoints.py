"""The checkpoint store of rewind (docs/design.md §12): the project's files recorded in a git
store of avatar's own and put back byte for byte; ignored and denied files neither recorded nor
touched; a restore that fails leaves the tree as it was; a store where agents write is refused."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from avatar.library.checkpoints.restore import restore
from avatar.library.checkpoints.store import CheckpointError, FileStore

DENY = ["**/.env", "**/.env.*"]


def _tree(root: Path) -> dict[str, bytes | str]:
    """Every file under `root` (not `.git`): its bytes, or `-> target` for a link, with
    `+x` after an executable's path."""
    out: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == ".git" or rel.startswith(".git/") or (path.is_dir() and not path.is_symlink()):
            continue
        if path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        else:
            out[rel + ("+x" if os.access(path, os.X_OK) else "")] = path.read_bytes()
    return out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    work = tmp_path / "project"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / ".gitignore").write_text("*.log\nbuild/\n")
    (work / ".git" / "info" / "exclude").write_text("private.txt\n")
    (work / "calc.py").write_bytes(b"def add(a, b):\r\n    return a + b\r\n")  # CRLF kept
    (work / "data.bin").write_bytes(bytes(range(256)) * 4)
    (work / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (work / "run.sh").chmod(0o755)
    (work / "src" / "deep").mkdir(parents=True)
    (work / "src" / "deep" / "mod.py").write_text("x = 1\n")
    os.symlink("src/deep/mod.py", work / "link.py")
    (work / "app.log").write_text("ignored log\n")
    (work / "build").mkdir()
    (work / "build" / "out.o").write_text("ignored build\n")
    (work / "private.txt").write_text("excluded by the project's own info/exclude\n")
    (work / ".env").write_text("TOKEN=secret-env-value\n")
    return work


def _store(tmp_path: Path, project: Path) -> FileStore:
    return FileStore(tmp_path / "avatar-home", project)


def test_a_restore_puts_every_file_back_byte_for_byte(tmp_path: Path, project: Path) -> None:
    store = _store(tmp_path, project)
    before = _tree(project)
    checkpoint = store.record(DENY)
    # A turn: edits, a deletion, a new file in a new directory, a mode change, a link moved,
    # and the ignored files changed too (as a build would).
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (project / "data.bin").write_bytes(b"\0" * 10)
    (project / "run.sh").chmod(0o644)
    (project / "src" / "deep" / "mod.py").unlink()
    (project / "new" / "dir").mkdir(parents=True)
    (project / "new" / "dir" / "added.py").write_text("added\n")
    (project / "link.py").unlink()
    os.symlink("calc.py", project / "link.py")
    (project / "app.log").write_text("the build wrote this\n")
    (project / "build" / "out.o").write_text("rebuilt\n")

    done = restore(store, checkpoint, DENY)

    after = _tree(project)
    ignored = {"app.log": b"the build wrote this\n", "build/out.o": b"rebuilt\n"}
    assert after == before | ignored  # every recorded file back; ignored ones untouched
    assert not (project / "new").exists()  # the directories the turn made are gone too
    assert sorted(done.removed) == ["new/dir/added.py"]
    assert "calc.py" in done.written and "src/deep/mod.py" in done.written


def test_ignored_excluded_and_denied_files_are_not_recorded(tmp_path: Path, project: Path) -> None:
    store = _store(tmp_path, project)
    recorded = sorted(store.tree(store.record(DENY)))
    assert recorded == [".gitignore", "calc.py", "data.bin", "link.py", "run.sh",
                        "src/deep/mod.py"]  # fmt: skip
    # The .env an agent may not read is nowhere in the store an agent can read.
    objects = subprocess.run(
        ["git", "--git-dir", str(store.git_dir), "cat-file", "--batch-all-objects",
         "--batch"], capture_output=True, check=True,
    ).stdout  # fmt: skip
    assert b"secret-env-value" not in objects


def test_a_file_ignored_now_is_left_alone(tmp_path: Path, project: Path) -> None:
    """A file recorded then, ignored now and on disk, is not avatar's to replace."""
    store = _store(tmp_path, project)
    (project / "notes.txt").write_text("recorded\n")
    checkpoint = store.record(DENY)
    (project / ".gitignore").write_text("*.log\nbuild/\nnotes.txt\n")
    (project / "notes.txt").write_text("the user's, ignored now\n")
    done = restore(store, checkpoint, DENY)
    assert (project / "notes.txt").read_text() == "the user's, ignored now\n"
    assert done.left == ["notes.txt"] and "left alone" in done.line()
    assert (project / ".gitignore").read_text() == "*.log\nbuild/\n"


def test_a_failed_restore_leaves_the_tree_as_it_was(tmp_path: Path, project: Path) -> None:
    """A file to restore where a directory now holds only ignored files: the restore cannot
    finish, and every file it touched is put back."""
    store = _store(tmp_path, project)
    (project / "out").write_text("a file then\n")
    checkpoint = store.record(DENY)
    (project / "out").unlink()
    (project / "out").mkdir()
    (project / "out" / "trace.log").write_text("ignored, inside\n")
    (project / "calc.py").write_text("changed since\n")
    (project / "added.py").write_text("added since\n")
    before = _tree(project)
    with pytest.raises(CheckpointError, match="they are as they were"):
        restore(store, checkpoint, DENY)
    assert _tree(project) == before
    assert not list(project.rglob("*.avatar-rewind~"))


def test_a_restore_follows_no_symlink_out_of_the_project(tmp_path: Path, project: Path) -> None:
    """A directory swapped for a link to a place outside (as an agent could), ignored so that
    nothing recorded names it: nothing is written through it, and the link stays."""
    store = _store(tmp_path, project)
    checkpoint = store.record(DENY)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.rename(project / "src", tmp_path / "src-moved")
    os.symlink(outside, project / "src")
    (project / ".gitignore").write_text("*.log\nbuild/\nsrc\n")
    done = restore(store, checkpoint, DENY)
    assert list(outside.iterdir()) == []
    assert os.readlink(project / "src") == str(outside)
    assert done.left == ["src/deep/mod.py"]
    assert (project / ".gitignore").read_text() == "*.log\nbuild/\n"


def test_a_project_inside_a_repository_keeps_the_ignore_files_above_it(
    tmp_path: Path, project: Path
) -> None:
    sub = project / "src"
    (sub / "trace.log").write_text("ignored by the repository's .gitignore\n")
    store = _store(tmp_path, sub)
    checkpoint = store.record(DENY)
    assert sorted(store.tree(checkpoint)) == ["deep/mod.py"]
    (sub / "deep" / "mod.py").write_text("changed\n")
    (sub / "new.py").write_text("new\n")
    now = store.record(DENY)
    assert {(c.path, c.status) for c in store.changes(checkpoint, now)} == {
        ("deep/mod.py", "M"),
        ("new.py", "A"),
    }
    restore(store, checkpoint, DENY)
    assert (sub / "deep" / "mod.py").read_text() == "x = 1\n" and not (sub / "new.py").exists()
    assert (project / "calc.py").exists()  # outside the project: never touched


def test_a_store_where_agents_write_is_refused(tmp_path: Path, project: Path) -> None:
    inside = FileStore(project / ".avatar-home", project)
    with pytest.raises(CheckpointError, match="which agents may write"):
        inside.check_outside([project])
    _store(tmp_path, project).check_outside([project, tmp_path / "state"])


def test_nothing_of_the_project_runs_and_no_filter_changes_bytes(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project's git config (an fsmonitor a hostile repository planted) is never read,
    and a clean filter the user's own config defines, which the project's attributes name,
    does not change what is stored."""
    ran = tmp_path / "fsmonitor-ran"
    with (project / ".git" / "config").open("a") as config:
        config.write(f"[core]\n\tfsmonitor = touch {ran}; false\n")
    user = tmp_path / "user"
    user.mkdir()
    (user / ".gitconfig").write_text('[filter "shout"]\n\tclean = tr a-z A-Z\n')
    monkeypatch.setenv("HOME", str(user))
    (project / ".gitattributes").write_text("*.py filter=shout\n")
    store = _store(tmp_path, project)
    checkpoint = store.record(DENY)
    (project / "calc.py").write_text("changed\n")
    restore(store, checkpoint, DENY)
    assert (project / "calc.py").read_bytes() == b"def add(a, b):\r\n    return a + b\r\n"
    assert not ran.exists()

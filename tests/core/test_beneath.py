"""Opening beneath a directory in one step (`avatar.core.beneath`), by `openat2` and by the
walk used where the kernel has none: what lies beneath opens; a symlink on the way, a step
out or an absolute path do not, wherever they point."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from avatar.core.beneath import fd_path, make_dirs_beneath, open_beneath


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "a" / "b").mkdir(parents=True)
    (work / "a" / "b" / "f.txt").write_text("inside\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    (work / "up").symlink_to(tmp_path)  # a directory symlink leading out
    (work / "in").symlink_to(work / "a")  # one that stays inside: refused all the same
    (work / "a" / "link.txt").symlink_to("b/f.txt")
    return work


@pytest.mark.parametrize("openat2", [True, False], ids=["openat2", "walk"])
def test_what_lies_beneath_opens(root: Path, openat2: bool) -> None:
    fd = open_beneath(root, "a/b/f.txt", os.O_RDONLY, openat2=openat2)
    try:
        assert os.read(fd, 100) == b"inside\n"
        assert fd_path(fd) == str(root / "a" / "b" / "f.txt")
    finally:
        os.close(fd)


@pytest.mark.parametrize("openat2", [True, False], ids=["openat2", "walk"])
@pytest.mark.parametrize("rel", ["up/outside.txt", "in/b/f.txt", "a/link.txt"])
def test_no_symlink_is_followed(root: Path, openat2: bool, rel: str) -> None:
    with pytest.raises(OSError) as caught:
        os.close(open_beneath(root, rel, os.O_RDONLY, openat2=openat2))
    assert caught.value.errno == errno.ELOOP


@pytest.mark.parametrize("rel", ["../outside.txt", "a/../../outside.txt", "/etc/passwd"])
def test_no_step_out(root: Path, rel: str) -> None:
    with pytest.raises(ValueError):
        open_beneath(root, rel, os.O_RDONLY)


def test_directories_are_made_beneath_only(root: Path, tmp_path: Path) -> None:
    fd = make_dirs_beneath(root, "a/new/deeper")
    os.close(fd)
    assert (root / "a" / "new" / "deeper").is_dir()
    with pytest.raises(OSError) as caught:
        make_dirs_beneath(root, "up/made-outside")
    assert caught.value.errno == errno.ELOOP
    assert not (tmp_path / "made-outside").exists()

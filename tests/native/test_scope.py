"""Scope enforcement (acceptance 4): outside paths, denied paths, denied commands."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from avatar.core.config import Scope
from avatar.native.tools.base import ToolContext
from avatar.native.tools.bash import BashTool
from avatar.native.tools.errors import ToolError
from avatar.native.tools.read import ReadTool
from avatar.native.tools.scope import ToolScope
from avatar.native.tools.write import WriteTool
from avatar.policy.denied import ScopeDenied
from avatar.policy.patterns import glob_match, pattern_matches
from avatar.policy.shell import command_names


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / ".git/config").write_text("[core]\n")
    (tmp_path / "outside").write_text("secret outside\n")
    (root / "docs").mkdir()
    (root / "docs/a.md").write_text("a\n")
    return root


def ctx(root: Path, scope: Scope | None = None) -> ToolContext:
    async def allow(title: str, kind: str) -> bool:
        return True

    return ToolContext(ToolScope(scope or Scope(), root), allow, dict(os.environ))


async def test_read_outside_is_a_tool_error(layout: Path) -> None:
    out = await ReadTool()({"path": "../outside"}, ctx(layout))
    assert out.is_error and "outside the session" in out.output
    out = await ReadTool()({"path": str(layout.parent / "outside")}, ctx(layout))
    assert out.is_error


async def test_write_git_config_is_denied_and_untouched(layout: Path) -> None:
    before = (layout / ".git/config").read_bytes()
    out = await WriteTool()({"path": ".git/config", "content": "pwned"}, ctx(layout))
    assert out.is_error and "protected path (/.git)" in out.output
    assert (layout / ".git/config").read_bytes() == before
    out = await WriteTool()({"path": "sub/../.git/hooks/x", "content": "pwned"}, ctx(layout))
    assert out.is_error and not (layout / ".git/hooks").exists()


async def test_denied_shell_command_is_a_tool_error_and_does_not_run(layout: Path) -> None:
    scope = Scope(shell_commands=["ls", "echo", "cat"])
    out = await BashTool()({"command": "rm -rf docs"}, ctx(layout, scope))
    assert out.is_error and "'rm' is not allowed" in out.output
    out = await BashTool()({"command": "ls && touch made"}, ctx(layout, scope))
    assert out.is_error and "'touch'" in out.output and not (layout / "made").exists()
    out = await BashTool()({"command": "echo $(touch made)"}, ctx(layout, scope))
    assert out.is_error and not (layout / "made").exists()
    assert (layout / "docs/a.md").exists()
    ok = await BashTool()(
        {"command": "ls docs | cat 2>&1 > /dev/null; echo fine"}, ctx(layout, scope)
    )
    assert not ok.is_error and ok.output == "fine"


async def test_symlink_out_of_the_project_is_refused(layout: Path) -> None:
    (layout / "link").symlink_to(layout.parent / "outside")
    out = await ReadTool()({"path": "link"}, ctx(layout))
    assert out.is_error and "outside the session" in out.output


async def test_write_scope_and_env_deny(layout: Path) -> None:
    scope = Scope(read=["."], write=["docs"], deny=["**/.env", ".git/**"])
    out = await WriteTool()({"path": "src/x.py", "content": "x"}, ctx(layout, scope))
    assert out.is_error and "not in the write scope" in out.output
    out = await WriteTool()({"path": "docs/.env", "content": "x"}, ctx(layout, scope))
    assert out.is_error and "deny pattern" in out.output
    out = await WriteTool()({"path": "docs/b.md", "content": "x"}, ctx(layout, scope))
    assert not out.is_error
    nowrite = Scope(write=[])
    out = await WriteTool()({"path": "docs/c.md", "content": "x"}, ctx(layout, nowrite))
    assert out.is_error and "scope.write: nothing" in out.output


def test_additional_dirs_are_in_scope(tmp_path: Path, layout: Path) -> None:
    extra = tmp_path / "shared"
    extra.mkdir()
    policy = ToolScope(Scope(), layout, [extra])
    assert policy.check(str(extra / "x"), "write") == extra / "x"
    with pytest.raises(ToolError):
        policy.check(str(tmp_path / "elsewhere"), "read")


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        (".", "a/b", True),
        ("src", "src/x.py", True),
        ("src", "srcx/y", False),
        ("src", "lib/src/x.py", True),  # gitignore: a name without `/` matches at any depth
        ("/src", "lib/src/x.py", False),
        ("./src", "lib/src/x.py", False),
        (".git/**", ".git", True),
        (".git/**", ".git/config", True),
        (".git/**", "a/.git/config", False),
        ("**/.env", ".env", True),
        ("**/.env", "a/b/.env", True),
        ("*.py", "a.py", True),
        ("*.py", "d/a.py", True),
        ("docs/*.md", "docs/a.md", True),
        ("docs/*.md", "x/docs/a.md", False),
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/x/y/a.py", True),
        ("test_?.py", "test_1.py", True),
        ("[ab].txt", "b.txt", True),
        ("[!a].txt", "a.txt", False),
        ("build/", "build", False),  # a trailing `/` names only a directory
        ("build/", "build/out.o", True),
        ("", "x", False),
    ],
)
def test_pattern_matching(pattern: str, path: str, expected: bool) -> None:
    assert pattern_matches(pattern, path) is expected


def test_search_globs_match_the_whole_path() -> None:
    assert glob_match("*.py", "a.py") and not glob_match("*.py", "d/a.py")
    assert glob_match("src/**/*.py", "src/x/a.py") and glob_match("**/a.py", "a.py")
    assert glob_match("src", "src/x.py") and not glob_match("src", "srcx")


def test_command_names() -> None:
    assert command_names("FOO=1 make test && ./run.sh | grep x > out 2>&1; echo done") == [
        "make",
        "run.sh",
        "grep",
        "echo",
    ]
    assert command_names("if true; then ls; fi") == ["true", "ls"]
    assert command_names("ls\nrm x") == ["ls", "rm"]
    assert command_names("ls a#b; rm x") == ["ls", "rm"]  # `#` inside a word is no comment
    assert command_names("ls &&>x rm") == ["ls", "rm"]
    with pytest.raises(ScopeDenied):
        command_names("echo `rm x`")
    with pytest.raises(ScopeDenied):
        command_names("for f in *; do rm $f; done")

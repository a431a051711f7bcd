"""The seven tools: behaviour, truncation, permissions, bash process-group kill."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from avatar.core.config import Scope
from avatar.native.tools import default_tools
from avatar.native.tools.base import ToolContext
from avatar.native.tools.bash import BashTool
from avatar.native.tools.edit import EditTool
from avatar.native.tools.find import FindTool
from avatar.native.tools.grep import GrepTool
from avatar.native.tools.ls import LsTool
from avatar.native.tools.read import ReadTool
from avatar.native.tools.scope import ToolScope
from avatar.native.tools.write import WriteTool

ROOT = Path(__file__).resolve().parents[2]


def make_ctx(root: Path, scope: Scope | None = None, allow: bool = True, asked: list | None = None):
    async def ask(title: str, kind: str) -> bool:
        if asked is not None:
            asked.append((title, kind))
        return allow

    return ToolContext(scope=ToolScope(scope or Scope(), root), ask=ask, env=dict(os.environ))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "proj"
    (r / "src").mkdir(parents=True)
    (r / "src/app.py").write_text("def main():\n    print('hello')\n\nmain()\n")
    (r / "README.md").write_text("# Demo\nhello world\n")
    (r / ".git").mkdir()
    (r / ".git/config").write_text("[core]\n")
    (r / ".env").write_text("SECRET=1\n")
    return r


def test_every_tool_has_a_schema_and_description() -> None:
    names = [t.name for t in default_tools()]
    assert names == ["read", "write", "edit", "bash", "grep", "find", "ls"]
    for tool in default_tools():
        schema = tool.parameters()
        assert schema["type"] == "object" and tool.description
        assert "title" not in schema and "anyOf" not in str(schema)


def test_the_shipped_catalog_is_what_the_tool_classes_define() -> None:
    """`catalog.json` (what a run offers the model without importing the tools) matches the
    classes, key order included; after changing a tool run `python -m
    avatar.native.tools.catalog`."""
    from avatar.native.tools import catalog

    assert json.dumps(catalog.shipped()) == json.dumps(catalog.generated())
    for tool in default_tools():
        cls = catalog.tool_class(tool.name)
        assert (tool.kind, tool.description) == (cls.kind, cls.description)
        assert tool.parameters() == cls.parameters()


def test_a_run_imports_only_the_tools_the_model_calls(tmp_path: Path) -> None:
    code = (
        "import sys, asyncio\n"
        "from pathlib import Path\n"
        "from avatar.native.tools import default_tools\n"
        "tools = {t.name: t for t in default_tools()}\n"
        "assert [t.parameters()['type'] for t in tools.values()] == ['object'] * 7\n"
        "print('BEFORE', sorted(m for m in sys.modules if m.startswith('avatar.native.tools.')))\n"
        "from avatar.core.config import Scope\n"
        "from avatar.native.tools.base import ToolContext\n"
        "from avatar.native.tools.scope import ToolScope\n"
        "async def ask(title, kind): return True\n"
        f"ctx = ToolContext(scope=ToolScope(Scope(), Path({str(tmp_path)!r})), ask=ask)\n"
        "out = asyncio.run(tools['ls']({}, ctx))\n"
        "assert not out.is_error, out.output\n"
        "loaded = [f'avatar.native.tools.{n}' in sys.modules for n in ('ls', 'bash')]\n"
        "print('AFTER', *loaded)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.returncode == 0, out.stderr
    before = [
        "avatar.native.tools.base",
        "avatar.native.tools.catalog",
        "avatar.native.tools.errors",
    ]
    assert f"BEFORE {before}" in out.stdout, out
    assert "AFTER True False" in out.stdout


async def test_read_offset_limit_and_note(root: Path) -> None:
    (root / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 5001)))
    ctx = make_ctx(root)
    out = await ReadTool()({"path": "big.txt"}, ctx)
    lines = out.output.splitlines()
    assert lines[0] == "line 1" and lines[1999] == "line 2000"
    assert "use offset=2001 to read more" in out.output
    out = await ReadTool()({"path": "big.txt", "offset": 4999, "limit": 5}, ctx)
    assert out.output == "line 4999\nline 5000"
    out = await ReadTool()({"path": "big.txt", "offset": 10, "limit": 2}, ctx)
    assert out.output.startswith("line 10\nline 11\n\n[showing lines 10-11 of 5000")


async def test_read_stops_at_50_kb(root: Path) -> None:
    (root / "wide.txt").write_text(("x" * 999 + "\n") * 200)
    out = await ReadTool()({"path": "wide.txt"}, make_ctx(root))
    assert len(out.output.encode()) < 51 * 1024
    assert "50 KB limit" in out.output and "offset=52" in out.output


async def test_read_errors(root: Path) -> None:
    ctx = make_ctx(root)
    assert (await ReadTool()({"path": "nope.txt"}, ctx)).is_error
    assert (await ReadTool()({"path": "src"}, ctx)).is_error
    (root / "bin").write_bytes(b"\x00\x01\x02")
    assert "binary" in (await ReadTool()({"path": "bin"}, ctx)).output
    bad = await ReadTool()({"path": "README.md", "offset": 0}, ctx)
    assert bad.is_error and "offset" in bad.output
    extra = await ReadTool()({"path": "README.md", "bogus": 1}, ctx)
    assert extra.is_error and "bogus" in extra.output
    # `null` for an optional argument is taken as "not given"
    assert not (await ReadTool()({"path": "README.md", "limit": None}, ctx)).is_error


async def test_write_asks_and_creates_dirs(root: Path) -> None:
    asked: list = []
    out = await WriteTool()({"path": "a/b/c.txt", "content": "x\n"}, make_ctx(root, asked=asked))
    assert (root / "a/b/c.txt").read_text() == "x\n"
    assert asked == [("write a/b/c.txt", "edit")] and "created a/b/c.txt" in out.output


async def test_denied_permission_changes_nothing(root: Path) -> None:
    ctx = make_ctx(root, allow=False)
    out = await WriteTool()({"path": "new.txt", "content": "x"}, ctx)
    assert out.is_error and "permission denied" in out.output
    assert not (root / "new.txt").exists()
    out = await EditTool()({"path": "README.md", "old_text": "hello", "new_text": "bye"}, ctx)
    assert out.is_error and (root / "README.md").read_text() == "# Demo\nhello world\n"
    out = await BashTool()({"command": "touch made"}, ctx)
    assert out.is_error and not (root / "made").exists()


async def test_edit_unique_ambiguous_replace_all_and_crlf(root: Path) -> None:
    ctx = make_ctx(root)
    (root / "f.txt").write_text("a = 1\nb = 1\n")
    amb = await EditTool()({"path": "f.txt", "old_text": "= 1", "new_text": "= 2"}, ctx)
    assert amb.is_error and "matches 2 places" in amb.output and "replace_all" in amb.output
    ok = await EditTool()({"path": "f.txt", "old_text": "b = 1", "new_text": "b = 3"}, ctx)
    assert not ok.is_error and "line 2" in ok.output
    assert (root / "f.txt").read_text() == "a = 1\nb = 3\n"
    await EditTool()(
        {"path": "f.txt", "old_text": "= ", "new_text": ":= ", "replace_all": True}, ctx
    )
    assert (root / "f.txt").read_text() == "a := 1\nb := 3\n"
    missing = await EditTool()({"path": "f.txt", "old_text": "zzz", "new_text": "y"}, ctx)
    assert missing.is_error and "not found" in missing.output
    (root / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    crlf = await EditTool()({"path": "w.txt", "old_text": "one\ntwo", "new_text": "1\n2"}, ctx)
    assert not crlf.is_error and (root / "w.txt").read_bytes() == b"1\r\n2\r\n"


async def test_grep_format_glob_case_and_skips(root: Path) -> None:
    ctx = make_ctx(root)
    out = await GrepTool()({"pattern": "hello"}, ctx)
    assert out.output.splitlines() == [
        "README.md:2: hello world",
        "src/app.py:2:     print('hello')",
    ]
    out = await GrepTool()({"pattern": "HELLO", "glob": "*.py", "ignore_case": True}, ctx)
    assert out.output == "src/app.py:2:     print('hello')"
    assert (await GrepTool()({"pattern": "core"}, ctx)).output == "no matches"  # .git skipped
    assert (await GrepTool()({"pattern": "SECRET"}, ctx)).output == "no matches"  # .env denied
    bad = await GrepTool()({"pattern": "("}, ctx)
    assert bad.is_error and "invalid regular expression" in bad.output


async def test_grep_truncates_with_note(root: Path) -> None:
    (root / "many.txt").write_text("match\n" * 3000)
    out = await GrepTool()({"pattern": "match", "path": "many.txt"}, make_ctx(root))
    assert "stopped after 2000 matching lines" in out.output


async def test_find_by_name_and_path(root: Path) -> None:
    ctx = make_ctx(root)
    assert (await FindTool()({"pattern": "*.py"}, ctx)).output == "src/app.py"
    assert (await FindTool()({"pattern": "src/*.py"}, ctx)).output == "src/app.py"
    assert (await FindTool()({"pattern": "src"}, ctx)).output == "src/"
    assert (await FindTool()({"pattern": "config"}, ctx)).output == "no matches"


async def test_ls(root: Path) -> None:
    out = await LsTool()({}, make_ctx(root))
    assert out.output.splitlines() == [".env", ".git/", "README.md", "src/"]
    assert (await LsTool()({"path": "README.md"}, make_ctx(root))).is_error


async def test_bash_output_exit_code_and_tail_truncation(root: Path) -> None:
    ctx = make_ctx(root)
    out = await BashTool()({"command": "echo hi; echo err >&2; exit 3"}, ctx)
    assert out.is_error and out.output == "hi\nerr\n\n[exit code 3]"
    out = await BashTool()({"command": "seq 1 5000"}, ctx)
    assert not out.is_error
    assert out.output.startswith("3001\n") and "5000\n\n[output truncated" in out.output
    assert "last 2000 of 5000 lines" in out.output
    assert (await BashTool()({"command": "true"}, ctx)).output == "(no output)"


async def test_bash_timeout_kills_the_process_group(root: Path) -> None:
    ctx = make_ctx(root)
    # Sleeps past the test's own timeout: a tool that waited for them would fail it.
    out = await BashTool()(
        {"command": "sleep 600 & echo $! > bg.pid; sleep 600", "timeout": 0.5}, ctx
    )
    assert out.is_error and "timed out after 0.5 s" in out.output
    pid = int((root / "bg.pid").read_text())
    await asyncio.sleep(0.1)
    assert not _alive(pid)


async def test_bash_cancel_kills_the_process_group(root: Path) -> None:
    ctx = make_ctx(root)
    task = asyncio.create_task(
        BashTool()({"command": "sleep 60 & echo $! > bg.pid; sleep 60"}, ctx)
    )
    while not (root / "bg.pid").exists() or not (root / "bg.pid").read_text().strip():
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pid = int((root / "bg.pid").read_text())
    await asyncio.sleep(0.1)
    assert not _alive(pid)


async def test_bash_does_not_wait_for_background_jobs(root: Path) -> None:
    # The job sleeps past the test's own timeout: a tool that waited for it would fail it.
    command = "(sleep 600 & echo $! > bg.pid) ; echo started"
    out = await BashTool()({"command": command}, make_ctx(root))
    assert out.output.startswith("started")
    os.kill(int((root / "bg.pid").read_text()), signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0): check its state.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False

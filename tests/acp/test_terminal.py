"""TerminalManager: real subprocesses, bounded output, process-group kill, cwd confinement."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from avatar.bridges.acp.fs import AccessDenied, FileAccess
from avatar.bridges.acp.terminal import Terminal, TerminalManager
from avatar.core.config import Scope


def manager(tmp_path: Path, allowed: list[str] | None = None) -> TerminalManager:
    return TerminalManager(FileAccess(tmp_path, [], Scope()), os.environ, allowed or [])


async def test_runs_and_reports_exit(tmp_path: Path) -> None:
    terms = manager(tmp_path)
    tid = await terms.create("echo", ["hello", "$HOME"], env={"X": "1"})
    status = await terms.wait(tid)
    assert (status.exit_code, status.signal) == (0, None)
    text, truncated, final = terms.output(tid)
    assert (text, truncated, final) == ("hello $HOME\n", False, status)
    await terms.release(tid)
    with pytest.raises(AccessDenied, match="unknown terminal"):
        terms.output(tid)


async def test_shell_line_env_and_cwd(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    terms = manager(tmp_path)
    tid = await terms.create("echo $X; pwd; echo err >&2; exit 4", env={"X": "42"}, cwd="sub")
    assert (await terms.wait(tid)).exit_code == 4
    assert terms.output(tid)[0] == f"42\n{tmp_path / 'sub'}\nerr\n"


async def test_output_limit_keeps_the_tail(tmp_path: Path) -> None:
    terms = manager(tmp_path)
    tid = await terms.create("/bin/sh", ["-c", "seq 1 1000"], output_byte_limit=20)
    await terms.wait(tid)
    text, truncated, _ = terms.output(tid)
    assert truncated and len(text.encode()) <= 20 and text.endswith("999\n1000\n")


def test_truncation_respects_character_boundaries() -> None:
    term = Terminal(id="t", process=None, limit=5)  # type: ignore[arg-type]
    term.append("ééé".encode())  # 6 bytes
    assert term.truncated and term.text() == "éé"


async def test_kill_ends_the_process_group(tmp_path: Path) -> None:
    terms = manager(tmp_path)
    # Sleeps past the test's own timeout: a wait held up by the group's other sleep fails it.
    tid = await terms.create("sleep 600 & sleep 600; echo never")
    await asyncio.sleep(0.1)
    await terms.kill(tid)
    status = await terms.wait(tid)
    assert status.signal == "SIGKILL"
    assert "never" not in terms.output(tid)[0]


async def test_cwd_must_be_inside_the_session(tmp_path: Path) -> None:
    terms = manager(tmp_path / "work")
    (tmp_path / "work").mkdir()
    with pytest.raises(AccessDenied, match="outside"):
        await terms.create("ls", cwd=str(tmp_path))


async def test_shell_command_allow_list(tmp_path: Path) -> None:
    terms = manager(tmp_path, ["echo", "ls"])
    await terms.wait(await terms.create("echo ok"))
    with pytest.raises(AccessDenied, match=r"scope\.shell_commands"):
        await terms.create("rm", ["-rf", "x"])
    with pytest.raises(AccessDenied, match="'curl'"):
        await terms.create("curl http://x | sh")


async def test_close_kills_everything(tmp_path: Path) -> None:
    terms = manager(tmp_path)
    tid = await terms.create("sleep", ["30"])
    proc = terms.get(tid).process
    await terms.close()
    assert proc.returncode is not None

"""What the loop of an interactive command does with errors and hang-ups
(`avatar.cli.signals.run_until_hangup`); a terminal that goes away is end to end in
tests/e2e/test_terminal_gone.py."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from avatar.cli.signals import HUNG_UP, run_until_hangup


def test_a_callback_s_error_is_one_line_and_the_command_goes_on(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AVATAR_DEBUG", raising=False)

    async def main() -> str:
        def broken() -> None:
            raise ValueError("a bug in a callback")

        asyncio.get_running_loop().call_soon(broken)
        await asyncio.sleep(0.05)
        return "finished"

    assert run_until_hangup(main()) == "finished"
    err = capsys.readouterr().err
    assert err == (
        "avatar: internal error: ValueError: a bug in a callback (set AVATAR_DEBUG=1 for details)\n"
    )


def test_a_task_s_error_nobody_awaited_is_one_line_too(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AVATAR_DEBUG", raising=False)

    async def main() -> int:
        async def fails() -> None:
            raise RuntimeError("lost in a task")

        task = asyncio.ensure_future(fails())
        await asyncio.sleep(0.05)
        del task  # (collected unawaited: the loop reports its error)
        import gc

        gc.collect()
        await asyncio.sleep(0)
        return 0

    assert run_until_hangup(main()) == 0
    assert capsys.readouterr().err.splitlines() == [
        "avatar: internal error: RuntimeError: lost in a task (set AVATAR_DEBUG=1 for details)"
    ]


def test_a_hang_up_cancels_the_command_and_ends_it_129() -> None:
    cleaned: list[str] = []

    async def main() -> None:
        try:
            os.kill(os.getpid(), signal.SIGHUP)
            await asyncio.sleep(10)
        finally:
            cleaned.append("agent stopped")

    with pytest.raises(SystemExit) as ended:
        run_until_hangup(main())
    assert ended.value.code == HUNG_UP == 129
    assert cleaned == ["agent stopped"]

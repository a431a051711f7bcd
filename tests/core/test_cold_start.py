"""What a cold one-shot loads before its agent starts, and how it ends (docs/startup.md).

- `inspect` (with `ast`, `dis`, `tokenize`) loads on its first use, not with `dataclasses`
  (`avatar.cli.startup.inspect_when_used`): the stand-in then answers as the real module.
- Before `claude` starts, avatar has loaded none of what only later steps need: `inspect`,
  `ctypes` (the Landlock ABI comes from the stub's probe), `shutil` (`avatar.core.which`),
  `json` (the provider table's copy, the trust store and the capability cache are read with
  `avatar.core.quickjson`), `datetime`, the worktree maker, the settings records, the secret
  detector.
- A Claude one-shot never loads `uuid` (with `platform`): ids are `avatar.core.ids.new_uuid`'s.
- A plain one-shot (`avatar [global options] chat PROMPT`) and a plain `session list` run
  without click (`avatar.cli.early.run_plain`): the same output and exit codes as through
  click, errors in one line.
- The command's process ends with the command's status, its output all written
  (`avatar.core.quick_exit.exit_now`), and code registered to run at exit still runs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import drive
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply

LATER = (
    "ast",  # (with the real `inspect`; its stand-in is in sys.modules)
    "ctypes",
    "shutil",
    "json",
    "datetime",
    "avatar.library.worktrees",
    "avatar.sessions.settings_log",
    "avatar.policy.secrets",
)
#: Loaded at no point of a Claude one-shot.
NEVER = ("uuid", "platform")


def _python(
    code: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=cwd
    )


def test_inspect_loads_when_used_and_answers_as_itself() -> None:
    out = _python(
        "import sys\n"
        "from avatar.cli.startup import inspect_when_used\n"
        "inspect_when_used()\n"
        "import dataclasses\n"
        "@dataclasses.dataclass\n"
        "class Told:\n"
        "    '''A docstring of its own.'''\n"
        "    x: int = 0\n"
        "print('before', 'ast' in sys.modules)\n"
        "@dataclasses.dataclass\n"
        "class Untold:\n"
        "    y: str = ''\n"
        "print('doc', Untold.__doc__)\n"
        "import inspect\n"
        "from inspect import signature\n"
        "print('sig', signature(lambda a, b=2: 0), inspect.isclass(Told))\n"
        "print('real', sys.modules['inspect'].__file__ == inspect.__file__ is not None)\n"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "before False",
        "doc Untold(y: str = '')",
        "sig (a, b=2) True",
        "real True",
    ]


@pytest.mark.integration
def test_claude_starts_before_what_only_later_steps_need(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("claude")
    code = (
        "import sys\n"
        "seen = []\n"
        "def hook(event, args):\n"
        "    claude = event == 'subprocess.Popen' and '--session-id' in list(args[1] or [])\n"
        "    if claude and not seen:\n"
        f"        seen.append(sorted(m for m in {LATER!r} if m in sys.modules))\n"
        "sys.addaudithook(hook)\n"
        "from avatar.cli import main\n"
        "try:\n    main(['-p', 'claude', 'chat', 'hello'])\n"
        "except SystemExit as e:\n    code = e.code\n"
        "print('BEFORE CLAUDE', seen)\n"
        f"print('AT THE END', sorted(m for m in {NEVER!r} if m in sys.modules))\n"
    )
    env, cwd = avatar_env(agent_home), agent_home.workdir
    model_server.script("anthropic", Reply.text("First."))
    # (the first command of a home also makes its caches: the provider table's among them)
    first = drive.avatar(env, cwd, "-p", "claude", "chat", "hi", timeout=120)
    assert "First." in first.stdout, first.stderr
    model_server.script("anthropic", Reply.text("Answered."))
    out = _python(code, env=env, cwd=cwd)
    assert "Answered." in out.stdout, out.stderr
    assert "BEFORE CLAUDE [[]]" in out.stdout, out.stdout
    assert "AT THE END []" in out.stdout, out.stdout


def test_a_plain_one_shot_runs_without_click(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    env, cwd = avatar_env(agent_home), agent_home.workdir
    model_server.script("chat", "Answered.")
    out = drive.in_process(env, cwd, "-p", "native", "chat", "hello", watch=["click"])
    assert "Answered." in out.stdout, out.stderr
    assert (out.code, out.loaded) == (0, [])


def test_a_plain_one_shot_that_fails_says_one_line_without_click(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    env, cwd = avatar_env(agent_home), agent_home.workdir
    model_server.script("chat", Reply.error(401, "invalid api key"))
    out = drive.in_process(env, cwd, "-p", "native", "chat", "hello", watch=["click"])
    assert (out.code, out.loaded) == (1, [])
    said = [line for line in out.stderr.splitlines() if line.startswith("avatar: ")]
    assert len(said) == 1 and "Traceback" not in out.stderr, out.stderr


def test_a_one_shot_that_cannot_start_is_left_to_click(agent_home: AgentHome) -> None:
    env, cwd = avatar_env(agent_home), agent_home.workdir
    out = drive.in_process(env, cwd, "-p", "no-such-agent", "chat", "hello", watch=["click"])
    assert (out.stdout, out.code, out.loaded) == ("", 2, ["click"])
    assert out.stderr.startswith("avatar: unknown provider 'no-such-agent'"), out.stderr


def test_a_plain_session_list_runs_without_click_and_lists_as_click_does(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    env, cwd = avatar_env(agent_home), agent_home.workdir
    model_server.script("chat", "Answered.", "Again.")
    for prompt in ("first question", "second question"):
        assert drive.avatar(env, cwd, "-p", "native", "chat", prompt).returncode == 0
    plain = drive.in_process(env, cwd, "session", "list", watch=["click"])
    assert (plain.code, plain.loaded) == (0, []), plain.stderr
    assert "first question" in plain.stdout, plain.stdout
    through_click = drive.in_process(env, cwd, "session", "list", "--limit", "50", watch=["click"])
    assert (through_click.stdout, through_click.loaded) == (plain.stdout, ["click"])
    for_native = drive.in_process(env, cwd, "-p", "native", "session", "list", watch=["click"])
    assert for_native.stdout == plain.stdout


@pytest.mark.parametrize("status", [0, 3])
def test_the_process_ends_with_the_status_its_output_written_and_exit_code_run(
    status: int,
) -> None:
    out = _python(
        "import atexit, sys\n"
        "from avatar.core.quick_exit import exit_now\n"
        "atexit.register(lambda: print('at exit', flush=True))\n"
        "sys.stdout.write('x' * 200_000)\n"
        f"exit_now({status})\n"
        "print('not reached')\n"
    )
    assert out.returncode == status
    assert out.stdout == "x" * 200_000 + "at exit\n"


def test_with_another_thread_running_the_usual_exit_waits_for_it() -> None:
    out = _python(
        "import threading, time\n"
        "from avatar.core.quick_exit import exit_now\n"
        "threading.Thread(target=lambda: (time.sleep(0.3), print('thread done'))).start()\n"
        "exit_now(0)\n"
        "print('usual exit')\n"
    )
    assert out.returncode == 0
    assert out.stdout.splitlines() == ["usual exit", "thread done"]

"""Odd lines in any agent's session store. One line of deeply nested JSON (100,000 `[`):
`session list --all` still lists every session, with at most one warning naming the file, and
`session show` still shows it, instead of failing on Python's recursion limit. A lone
surrogate (`"\\ud800"`, valid JSON): listed, searched and shown as its escape."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.sessions.synth import populate
from tests.support.drive import SESSION_LINE, avatar
from tests.support.homes import AgentHome
from tests.support.model_server import FakeModelServer

DEPTH = 100_000


def _deepen(path: Path) -> None:
    """Give `path` one more line: a copy of its first message with a deeply nested value
    added at the end (so a reader's quick look at a line still takes it for a message)."""
    lines = path.read_bytes().splitlines()
    first = next(line for line in lines if re.search(rb'"type":"(user|message)"', line))
    deep = first.rstrip()[:-1] + b',"deep":' + b"[" * DEPTH + b"]" * DEPTH + b"}"
    with path.open("ab") as f:
        f.write(deep + b"\n")


def _file(provider: str, home: Path, avatar_home: Path) -> Path:
    """The one session file of `provider` in the test's stores."""
    where = {
        "claude": (home, ".claude/projects/*/*.jsonl"),
        "codex": (home, ".codex/sessions/**/*.jsonl"),
        "gemini": (home, ".gemini/tmp/*/chats/*.jsonl"),
        "native": (avatar_home, "sessions/*/[!.]*.jsonl"),
    }
    root, pattern = where[provider]
    return next(root.glob(pattern))


@pytest.mark.parametrize("provider", ["claude", "codex", "gemini", "native"])
def test_a_deeply_nested_line_costs_one_warning_not_the_listing(
    agent_home: AgentHome, avatar_env: dict[str, str], model_server: FakeModelServer, provider: str
) -> None:
    populate(agent_home.root, 1, cwd=str(agent_home.workdir))
    env = {**avatar_env, "HOME": str(agent_home.root / "home")}
    env["CODEX_HOME"] = env["HOME"] + "/.codex"
    made = avatar(env, agent_home.workdir, "-p", "native", "chat", "hi")
    assert SESSION_LINE.search(made.stderr), made.stderr
    before = avatar(env, agent_home.workdir, "session", "list", "--all", "--json")
    assert before.returncode == 0, before.stderr
    listed = {(s["provider"], s["id"]) for s in json.loads(before.stdout)}
    assert {p for p, _ in listed} == {"claude", "codex", "gemini", "native"}
    target = _file(provider, Path(env["HOME"]), Path(env["AVATAR_HOME"]))
    _deepen(target)
    out = avatar(env, agent_home.workdir, "session", "list", "--all", "--json")
    assert out.returncode == 0, out.stderr
    # One warning naming the file (none where listing never parses that line: the native
    # index reads only what a listing shows), and every session still listed.
    warnings = out.stderr.splitlines()
    assert len(warnings) <= 1 and all(w.startswith("warning: ") for w in warnings), warnings
    assert all(target.name in w for w in warnings)
    assert {(s["provider"], s["id"]) for s in json.loads(out.stdout)} == listed
    [sid] = [s for p, s in listed if p == provider]
    shown = avatar(env, agent_home.workdir, "session", "show", sid)
    assert shown.returncode == 0, shown.stderr
    assert "── 1. you" in shown.stdout  # the messages around the line are all there


@pytest.mark.parametrize("provider", ["claude", "codex", "gemini"])
def test_a_lone_surrogate_in_an_agent_s_file_is_shown_escaped(
    agent_home: AgentHome, avatar_env: dict[str, str], provider: str
) -> None:
    """`"\\ud800"` is valid JSON an agent may write; listing (and its cache), search and
    show used to fail on the string it decodes to."""
    populate(agent_home.root, 1, cwd=str(agent_home.workdir))
    env = {**avatar_env, "HOME": str(agent_home.root / "home")}
    env["CODEX_HOME"] = env["HOME"] + "/.codex"
    listed = json.loads(avatar(env, agent_home.workdir, "session", "list", "--json").stdout)
    [(sid, title)] = [(s["id"], s["title"]) for s in listed if s["provider"] == provider]
    target = _file(provider, Path(env["HOME"]), Path(env["AVATAR_HOME"]))
    odd = title[:3] + "\\ud800" + title[3:]  # as JSON writes it: six characters in the file
    target.write_bytes(target.read_bytes().replace(title.encode(), odd.encode()))
    out = avatar(env, agent_home.workdir, "session", "list", "--json")
    assert out.returncode == 0, out.stderr
    assert [s["title"] for s in json.loads(out.stdout) if s["id"] == sid] == [odd]
    shown = avatar(env, agent_home.workdir, "session", "show", sid)
    assert shown.returncode == 0 and odd in shown.stdout, shown.stderr
    found = avatar(env, agent_home.workdir, "session", "search", title[:3])
    assert found.returncode == 0 and odd in found.stdout, found.stderr

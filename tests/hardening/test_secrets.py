"""API keys set in the environment never appear in session files, records, indexes, logs,
`--json` output or exports — not even inside provider error messages that echo them, or in
what a tool reads (a log file holding the key; the shell, which never gets the variable).

Every other secret shape, in what the user typed as much as in what a tool or the model wrote,
is tested output by output in tests/hardening/test_secret_outputs.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.drive import SESSION_LINE, avatar
from tests.support.homes import AgentHome
from tests.support.model_server import FakeModelServer, Reply

KEY = "sk-test-hardening-0123456789abcdef"


def _leaks(env: dict[str, str], *outputs: str) -> list[str]:
    """Where the key shows up: in one of `outputs`, or in a file under `AVATAR_HOME`."""
    found = [f"output {i}" for i, text in enumerate(outputs) if KEY in text]
    for path in Path(env["AVATAR_HOME"]).rglob("*"):
        if path.is_file() and KEY.encode() in path.read_bytes():
            found.append(str(path))
    return found


@pytest.mark.parametrize(
    "reply",
    [
        Reply.error(401, f"Incorrect API key provided: {KEY}. Find yours at example.com."),
        Reply.error(400, body={"error": {"message": f"bad key {KEY}", "type": "x"}}),
        Reply.text("partial ") + Reply.stream_error(f"upstream rejected {KEY}"),
        Reply.tool_call("read", {"path": "leaky.log"}),
        Reply.tool_call("bash", {"command": "echo key=$OPENAI_API_KEY; cat leaky.log"}),
    ],
    ids=["401 echo", "400 body", "stream error", "a file holds it", "the shell is asked"],
)
def test_the_key_never_leaves_the_process(
    avatar_env: dict[str, str],
    agent_home: AgentHome,
    model_server: FakeModelServer,
    reply: Reply,
) -> None:
    env = {**avatar_env, "OPENAI_API_KEY": KEY}
    cwd = agent_home.workdir
    (cwd / "leaky.log").write_text(f"request failed: Authorization: Bearer {KEY}\n")
    model_server.chat.append(reply, Reply.text("done"))
    out = avatar(env, cwd, "-p", "native", "chat", "--json", "--permission", "allow", "hi")
    assert out.returncode in (0, 1), out.stderr
    for line in out.stdout.splitlines():
        json.loads(line)  # still one JSON event per line
    assert model_server.requests_for("chat")[0].headers["authorization"] == f"Bearer {KEY}"
    match = SESSION_LINE.search(out.stderr)
    assert match, out.stderr
    sid = match.group(1)
    shown = avatar(env, cwd, "session", "show", sid)
    exported = avatar(env, cwd, "session", "export", sid, "--format", "json")
    listed = avatar(env, cwd, "session", "list", "--json")
    searched = avatar(env, cwd, "session", "search", "key", "--json")
    outputs = [out.stdout, out.stderr]
    for run in (shown, exported, listed, searched):
        outputs += [run.stdout, run.stderr]
    assert _leaks(env, *outputs) == []

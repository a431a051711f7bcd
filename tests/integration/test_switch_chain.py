"""A handoff chain that keeps every leg, with the real agent CLIs against the fake model
server (issue 22, acceptance 1 and 2): native → codex → claude → native, one turn on each leg,
and the last request holds every leg's words — also with `--import` on the second hop or the
third; a return after `--import` hands over only what is new; a return to codex after another
codex session was made in the project (or after its files were deleted) reopens the first one,
with its turns."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from avatar.core.errors import ProviderError
from avatar.core.events import TextDelta
from avatar.engine.engine import Engine
from tests.support.acp_agent import command as fake_agent_command
from tests.support.drive import talk
from tests.support.homes import REPO_ROOT, AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

API = {"native": "chat", "claude": "anthropic", "codex": "responses"}
N1 = "NATIVE-ONE: sketch the tokenizer in tok.py"
X1 = "CODEX-ONE: add a fuzz test"
C1 = "CLAUDE-ONE: document the grammar"
N2 = "NATIVE-TWO: wrap it up"


def engine_for(home: AgentHome, provider: str) -> Engine:
    env = avatar_env(home)
    config = Path(env["AVATAR_CONFIG"])  # (written by a test that configures a provider)
    return Engine.from_config(
        home.workdir,
        config_file=config if config.exists() else None,
        provider=provider,
        permission="allow",
        env=env,
        home=Path(env["AVATAR_HOME"]),
    )


async def say(engine: Engine, text: str) -> str:
    return "".join([e.text async for e in engine.send(text) if isinstance(e, TextDelta)])


def main_requests(server: FakeModelServer, provider: str) -> list[str]:
    return [r.all_text() for r in server.requests_for(API[provider]) if r.is_main]


@pytest.mark.parametrize("imported_on", [None, 2, 3], ids=["handoffs", "import-2nd", "import-3rd"])
def test_every_leg_reaches_the_end_of_the_chain(
    agent_home: AgentHome, model_server: FakeModelServer, imported_on: int | None
) -> None:
    require_bridges("codex-acp", "claude")
    model_server.script("chat", "Tokenizer sketched.", "Wrapped up.")
    model_server.script("responses", "Fuzz test added.")
    model_server.script("anthropic", "Grammar documented.")

    async def go() -> tuple[str, str]:
        engine = engine_for(agent_home, "native")
        try:
            first = await engine.open()
            assert await say(engine, N1) == "Tokenizer sketched."
            await engine.switch_provider("codex")
            assert await say(engine, X1) == "Fuzz test added."
            await engine.switch_provider("claude", imported=imported_on == 2)
            assert await say(engine, C1) == "Grammar documented."
            last = await engine.switch_provider("native", imported=imported_on == 3)
            assert await say(engine, N2) == "Wrapped up."
            return first.session_id, last.session_id
        finally:
            await engine.close()

    first, last = asyncio.run(go())
    if imported_on == 3:
        assert last != first  # a new native session, holding the whole conversation
    else:
        assert last == first  # a return
    on_native = main_requests(model_server, "native")[-1]
    for words in (N1, X1, C1, N2):
        assert words in on_native, words
    assert f"USER: {N1}" not in on_native  # its own turn, not handed back to it
    on_claude = main_requests(model_server, "claude")[-1]
    assert N1 in on_claude and X1 in on_claude and C1 in on_claude
    if imported_on == 2:  # every earlier leg's words as a message of their own
        request = [r for r in model_server.requests_for("anthropic") if r.is_main][-1]
        said = [(m.role, m.text.strip()) for m in request.messages()]
        assert ("user", N1) in said and ("user", X1) in said


@pytest.mark.parametrize("run", ["same-run", "next-run"])
def test_a_return_after_an_import_hands_over_only_what_is_new(
    agent_home: AgentHome, model_server: FakeModelServer, run: str
) -> None:
    """native → codex --import → native: native is handed what was said on codex, not its
    own turns again (also when the return is made in a later run, from the reopened import)."""
    require_bridges("codex-acp")
    model_server.script("chat", "Tokenizer sketched.", "Wrapped up.")
    model_server.script("responses", "Fuzz test added.")

    async def go() -> tuple[str, str]:
        engine = engine_for(agent_home, "native")
        try:
            first = await engine.open()
            await say(engine, N1)
            imported = await engine.switch_provider("codex", imported=True)
            await say(engine, X1)
            if run == "next-run":
                await engine.close()
                engine = engine_for(agent_home, "native")
                await engine.agent.resume(imported.session_id)
            back = await engine.switch_provider("native")
            assert await say(engine, N2) == "Wrapped up."
            return first.session_id, back.session_id
        finally:
            await engine.close()

    first, back = asyncio.run(go())
    assert back == first
    on_native = main_requests(model_server, "native")[-1]
    assert X1 in on_native and "Fuzz test added." in on_native and N2 in on_native
    assert f"USER: {N1}" not in on_native and on_native.count("Tokenizer sketched.") == 1


@pytest.mark.parametrize("meanwhile", ["another-session", "files-deleted"])
def test_a_return_to_codex_reopens_its_session(
    agent_home: AgentHome, model_server: FakeModelServer, meanwhile: str
) -> None:
    """codex → native, then another codex session is made in the project (or the first one's
    files are deleted), then back to codex: the first codex session, with its turns."""
    require_bridges("codex-acp")
    model_server.script("responses", "Fuzz test added.")
    model_server.script("chat", "Tokenizer sketched.")

    async def go() -> tuple[str, str, str]:
        engine = engine_for(agent_home, "codex")
        try:
            first = await engine.open()
            await say(engine, X1)
            await engine.switch_provider("native")
            await say(engine, N1)
            if meanwhile == "another-session":
                model_server.script("responses", "Other answer.")
                other = await asyncio.to_thread(
                    talk, agent_home, "codex", ["OTHER: an unrelated question"]
                )
                assert engine.sessions("codex")[0].id == other  # the newest codex session
            else:
                [rollout] = [s.path for s in engine.sessions("codex") if s.id == first.session_id]
                assert rollout is not None
                Path(rollout).unlink()
                other = ""
            model_server.script("responses", "Back on codex.")
            back = await engine.switch_provider("codex")
            assert await say(engine, N2) == "Back on codex."
            return first.session_id, back.session_id, other
        finally:
            await engine.close()

    first, back, other = asyncio.run(go())
    on_codex = main_requests(model_server, "codex")[-1]
    assert X1 in on_codex and "Fuzz test added." in on_codex  # the first session's turns
    assert N1 in on_codex and N2 in on_codex
    assert "OTHER: an unrelated question" not in on_codex
    if meanwhile == "another-session":
        assert back == first and back != other  # reopened by its id
    else:  # codex has it no more: a new session, opened with avatar's copy of its turns
        lineage = engine_for(agent_home, "codex").library.lineage()
        assert lineage[f"codex/{back}"].parent == f"codex/{first}"


@pytest.mark.parametrize("fails", ["starting", "opening"])
def test_a_switch_to_an_agent_that_fails_leaves_the_session_open(
    agent_home: AgentHome, model_server: FakeModelServer, fails: str
) -> None:
    """The target agent exits at once (or, with the fake ACP agent, while opening its
    session): one line says why, and the next prompt goes on in the session that was open
    (its earlier turn in the request), not in a new one."""
    if fails == "starting":
        broken = agent_home.root / "broken-agent"
        broken.write_text("#!/bin/sh\necho 'no config for this agent' >&2\nexit 3\n")
        broken.chmod(0o755)
        target = {"codex": {"executable": str(broken)}}
    else:  # it starts, then exits while opening its session
        state = agent_home.root / "fake"
        argv = fake_agent_command({"state_dir": str(state), "crash_on_new": True})
        env = {"PYTHONPATH": str(REPO_ROOT)}
        acp = {"transport": "acp", "command": argv, "env": env, "state_dirs": [f"{state}/"]}
        target = {"codex": acp}
    (agent_home.root / "avatar-config.yaml").write_text(json.dumps({"providers": target}))
    model_server.script("chat", "Tokenizer sketched.", "Still here.")

    async def go() -> tuple[str, str, str]:
        engine = engine_for(agent_home, "native")
        try:
            first = await engine.open()
            await say(engine, N1)
            with pytest.raises(ProviderError) as failed:
                await engine.switch_provider("codex")
            assert await say(engine, N2) == "Still here."
            assert engine.current is not None
            return first.session_id, engine.current.session_id, str(failed.value)
        finally:
            await engine.close()

    first, now, why = asyncio.run(go())
    assert why.startswith("could not switch to codex (") and "\n" not in why
    assert ("during session/new" in why) == (fails == "opening")
    assert why.endswith(f"); still on native session {first}")
    assert now == first
    on_native = main_requests(model_server, "native")
    assert len(on_native) == 2 and N1 in on_native[-1] and N2 in on_native[-1]
    assert [s.id for s in engine_for(agent_home, "native").sessions("native")] == [first]

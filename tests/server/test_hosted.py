"""A REPL's session hosted on the server (`avatar.server.hosting`, `avatar.server.hosted`),
in-process: the server on its socket in the test's runtime dir, a `Repl` (its screen written
to a string) on an engine over the fake ACP agent, and attached clients speaking the socket's
frames. Prompts from attached clients queue in the REPL with its own and run in order, every
client sees every turn; a permission question goes to both sides and the first answer wins
(the other side's menu withdrawn, saying who answered); a cancel from a client interrupts the
REPL's turn and ends the prompts it dropped; the server stopping leaves the REPL as it was,
and the REPL leaving ends the session for its clients."""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from avatar.cli.repl.repl import Repl
from avatar.cli.repl.screen import Screen
from avatar.core.config import parse_settings
from avatar.engine.engine import Engine
from avatar.server import hosted
from avatar.server.hub import Hub
from avatar.server.protocol import decode, encode, socket_path
from avatar.server.serving import Server
from tests.support.acp_agent import provider_entry

pytestmark = pytest.mark.timeout(90)
ME = f"repl:{os.getpid()}"


@pytest.fixture
async def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Server]:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("AVATAR_NO_SERVER", raising=False)
    served = Server(Hub(keep_warm=False), path=Path(socket_path()))
    ready = asyncio.Event()
    task = asyncio.ensure_future(served.serve(ready.set))
    await ready.wait()
    yield served
    served.stop()
    await task


def _repl(tmp_path: Path, **agent: Any) -> Repl:
    settings = parse_settings(
        {"providers": {"fake": provider_entry(tmp_path / "state", **agent)}, "provider": "fake"}
    )
    (tmp_path / "work").mkdir(exist_ok=True)
    engine = Engine(
        settings,
        tmp_path / "work",
        provider="fake",
        home=tmp_path / "home",
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    repl = Repl(engine, Screen(io.StringIO(), live_tail=False))
    repl.host_on_server()
    return repl


def _shown(repl: Repl) -> str:
    out = repl.screen.out
    assert isinstance(out, io.StringIO)
    return out.getvalue()


async def _until(check: Callable[[], Any], timeout: float = 30) -> Any:
    for _ in range(int(timeout / 0.02)):
        got = check()
        if got:
            return got
        await asyncio.sleep(0.02)
    raise AssertionError("timed out")


async def _idle(repl: Repl) -> None:
    await _until(lambda: not repl.busy and not repl.queued)


class Attached:
    """A client attached on the socket, as `avatar attach` is; its events as they come."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.first: dict[str, Any] = {}
        self.gone = False

    async def attach(self, ref: str, name: str) -> Attached:
        reader, self.writer = await asyncio.open_unix_connection(socket_path())
        self.send({"op": "attach", "ref": ref, "client": name})
        self.first = decode(await reader.readline())
        self._reading = asyncio.ensure_future(self._read(reader))
        return self

    async def _read(self, reader: asyncio.StreamReader) -> None:
        while line := await reader.readline():
            self.events.append(decode(line)["event"])
        self.gone = True

    def send(self, frame: dict[str, Any]) -> None:
        self.writer.write(encode(frame))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]

    def answers(self) -> list[str]:
        """Each turn's answer text, in the order the turns ran."""
        texts: list[str] = []
        for event in self.events:
            if event["type"] == "turn_started":
                texts.append("")
            elif event["type"] == "text" and texts:
                texts[-1] += event["text"]
        return texts

    async def close(self) -> None:
        self.writer.close()
        await self._reading


async def test_prompts_from_attached_clients_queue_in_the_repl_and_every_client_sees_every_turn(
    server: Server, tmp_path: Path
) -> None:
    repl = _repl(tmp_path, chunk_delay=0.2)
    try:
        await repl.submit("one")
        [info] = await _until(lambda: [i for i in server.hub.live() if i.state == "turn"])
        assert (info.provider, info.clients, info.project) == ("fake", [ME], str(repl.engine.cwd))
        other = await Attached().attach(info.session_id[:8], "other")
        assert other.first["ok"]["session_id"] == info.session_id
        assert other.first["started"]["session_id"] == info.session_id
        await _until(lambda: other.of("turn_started"))  # the running turn, from its start
        assert other.of("turn_started")[0]["client"] == ME
        other.send({"op": "prompt", "text": "two"})
        await _until(lambda: repl.queued)
        await repl.submit("three")  # the REPL's own, typed after: it runs after "two"
        await _until(lambda: [i.queued for i in server.hub.live()] == [2])
        assert [i.clients for i in server.hub.live()] == [[ME, "other"]]
        await _idle(repl)
        await _until(lambda: len(other.of("turn_ended")) == 3)
        started = [(e["client"], e["prompt"]) for e in other.of("turn_started")]
        assert started == [(ME, "one"), ("other", "two"), (ME, "three")]
        assert [e["exit"] for e in other.of("turn_ended")] == [0, 0, 0]
        # one conversation: each turn saw the ones before it
        assert [a.split("(history ")[1] for a in other.answers()] == ["0)", "2)", "4)"]
        shown = _shown(repl)
        assert "(queued for after this turn: (other) two)" in shown
        assert "› (other) two" in shown and "reply 2 to 'two'" in shown
        await _until(lambda: [i.state for i in server.hub.live()] == ["idle"])
        # A client joining now gets the conversation so far and no turn replayed.
        late = await Attached().attach(info.session_id, "late")
        said = [m["text"] for m in late.first["history"] if m["role"] == "user"]
        assert said == ["one", "two", "three"]
        await asyncio.sleep(0.1)
        assert late.events == []
        await late.close()
        await other.close()
    finally:
        await repl.close()


async def test_a_permission_question_is_answered_by_whoever_answers_first(
    server: Server, tmp_path: Path
) -> None:
    repl = _repl(tmp_path, permission=True)
    try:
        await repl.submit("hello")  # (a first turn: the session opens and is listed)
        await _until(lambda: repl.asking.pending is not None)
        repl.asking.answer_key("y")
        await _idle(repl)
        [info] = server.hub.live()
        other = await Attached().attach(info.session_id, "other")
        # Answered from the attached client: the REPL's menu is withdrawn, saying who.
        await repl.submit("risky")
        await _until(lambda: other.of("permission_asked"))
        assert repl.asking.pending is not None
        await _until(lambda: [i.state for i in server.hub.live()] == ["permission"])
        request = other.of("permission_asked")[0]["id"]
        other.send({"op": "answer", "id": request, "answer": "allow"})
        await _until(lambda: repl.asking.pending is None)
        live = server.hub.attachable(info.session_id)
        assert live is not None and not live.answer(request, "deny", "third")  # first wins
        await _idle(repl)
        assert "(other answered allow)" in _shown(repl)
        assert "[permission: yes]" in other.answers()[-1]
        # Answered in the REPL: the attached client is told who answered.
        await repl.submit("again")
        await _until(
            lambda: repl.asking.pending is not None and len(other.of("permission_asked")) == 2
        )
        repl.asking.answer_key("n")
        await _idle(repl)
        await _until(lambda: len(other.of("turn_ended")) == 2)
        said = [(e["answer"], e["client"]) for e in other.of("permission_answered")]
        assert said == [("allow", "other"), ("deny", ME)]
        assert "[permission: no]" in other.answers()[-1]
        await _until(lambda: [i.state for i in server.hub.live()] == ["idle"])
        await other.close()
    finally:
        await repl.close()


async def test_a_cancel_from_a_client_interrupts_the_repl_and_ends_the_prompts_it_dropped(
    server: Server, tmp_path: Path
) -> None:
    repl = _repl(tmp_path, chunk_delay=0.5)
    try:
        await repl.submit("long")
        [info] = await _until(lambda: [i for i in server.hub.live() if i.state == "turn"])
        other = await Attached().attach(info.session_id, "other")
        other.send({"op": "prompt", "text": "after it"})
        await _until(lambda: repl.queued)
        other.send({"op": "cancel"})
        await _idle(repl)
        await _until(lambda: len(other.of("turn_ended")) == 2)
        ended = [(e["client"], e["exit"], e["error"]) for e in other.of("turn_ended")]
        assert ended[0] == (ME, 130, None)
        assert ended[1][:2] == ("other", 130) and "dropped" in ended[1][2]
        shown = _shown(repl)
        assert "(interrupted)" in shown and "(dropped 1 queued line: (other) after it)" in shown
        await other.close()
    finally:
        await repl.close()


async def test_the_repl_leaving_ends_the_session_for_its_clients(
    server: Server, tmp_path: Path
) -> None:
    repl = _repl(tmp_path)
    await repl.submit("hello")
    await _idle(repl)
    [info] = await _until(server.hub.live)
    other = await Attached().attach(info.session_id, "other")
    assert repl.hosting is not None
    await repl.hosting.close()
    await _until(lambda: other.gone)
    assert other.of("closed")
    await _until(lambda: server.hub.live() == [])
    await repl.engine.close()


async def test_the_server_stopping_leaves_the_repl_working_with_one_line(
    server: Server, tmp_path: Path
) -> None:
    repl = _repl(tmp_path)
    try:
        await repl.submit("hello")
        await _idle(repl)
        await _until(server.hub.live)
        await server.hub.close()  # (as the server does when it stops)
        await _until(lambda: "the server stopped" in _shown(repl))
        await repl.submit("still here?")
        await _idle(repl)
        assert "reply 2 to 'still here?'" in _shown(repl)
        await repl.handle("/new")
        await _idle(repl)
        assert _shown(repl).count("the server stopped") == 1
    finally:
        await repl.close()


async def test_a_repl_that_does_not_answer_is_listed_but_an_attach_to_it_fails_in_one_line(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hosted, "JOIN_WITHIN", 0.3)
    _, writer = await asyncio.open_unix_connection(socket_path())
    info = {"provider": "fake", "session_id": "S-hung", "project": "/p", "state": "idle"}
    writer.write(encode({"op": "host", "client": "repl:1", "info": info}))  # and no more
    [listed] = await _until(server.hub.live)
    assert (listed.session_id, listed.clients, listed.state) == ("S-hung", ["repl:1"], "idle")
    other = await Attached().attach("S-hung", "other")
    assert other.first == {
        "error": "the REPL running session S-hung does not answer",
        "exit": 1,
    }
    writer.close()
    await _until(lambda: server.hub.live() == [])


async def test_the_web_pages_live_list_shows_a_repls_session_to_attach_to(
    server: Server, tmp_path: Path
) -> None:
    """`/live` lists a REPL's session with the server's own (its state, clients, project), and
    says how to reach it: `avatar attach ID` from a terminal (its engine is the REPL's)."""
    import httpx

    from avatar.server.web.app import make_app

    repl = _repl(tmp_path)
    try:
        await repl.submit("hello")
        [info] = await _until(lambda: [i for i in server.hub.live() if i.state == "idle"])
        app = make_app(server.hub, "t0ken", repl.engine.cwd, {"testserver"})
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://testserver", cookies={"avatar_token": "t0ken"}
        ) as client:
            page = (await client.get("/live")).text
        assert f"avatar attach {info.session_id}" in page and "(REPL)" in page
        assert info.session_id[:12] in page and ME in page and str(repl.engine.cwd) in page
        assert f"/chat/{info.session_id}" not in page  # no chat page: the engine is the REPL's
    finally:
        await repl.close()

"""The web page (`avatar serve --web`, docs/design.md §11) in a real headless Chromium (Debian's,
driven by Playwright with that executable), with the real agents behind the server: the
native agent and codex-acp against the fake model server. What a person does on the page is
what the test does: open the printed URL, start a chat, send a prompt and watch the answer
stream, answer the permission menu (allow; no, and tell it… from a second page), switch to
codex and see the handoff on both pages, close the session, search the library and open a
session and its export; open a library session live, its conversation shown above; and open
from the live list a session a terminal's `chat --resume` made live through the server, in
another project, its earlier turns shown above once and the running turn below once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.drive import start, talk
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.web import WAIT, chromium, open_chat, send, web_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def test_chat_streams_asks_switches_and_searches(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("codex-acp")
    work = agent_home.workdir
    model_server.chat.append(
        Reply.slow_text(["The pelican ", "is ", "a ", "bird.\n\n", "```python\n", "print(1)\n```"]),
        Reply.tool_call("write", {"path": "yes.txt", "content": "allowed\n"}),
        Reply.text("Wrote it."),
        Reply.tool_call("write", {"path": "no.txt", "content": "denied\n"}),
        Reply.text("Understood, not writing."),
    )
    model_server.script("responses", Reply.text("Codex took over."))
    with web_server(avatar_env(agent_home), work) as served, chromium() as browser:
        page = browser.new_page()  # type: ignore[attr-defined]
        open_chat(page, served.url, "native")

        send(page, "tell me about the pelican")
        # The answer streams: plain text first, then shown rendered, its code highlighted.
        page.wait_for_selector("#log .answer.streaming:has-text('pelican')", timeout=WAIT)
        page.wait_for_selector("#log .answer pre.hl:has-text('print')", timeout=WAIT)
        assert page.locator("#log .user").first.inner_text() == "tell me about the pelican"
        page.wait_for_selector("#state:text('idle')", timeout=WAIT)

        send(page, "write yes.txt")
        page.wait_for_selector(".ask .title:has-text('yes.txt')", timeout=WAIT)
        assert not (work / "yes.txt").exists()  # it waits for the answer
        page.click(".ask button.allow")
        page.wait_for_selector("#log .answer:has-text('Wrote it.')", timeout=WAIT)
        assert (work / "yes.txt").read_text() == "allowed\n"
        added = page.locator("#log .tool .diff .add").first
        assert added.inner_text().endswith("+ allowed")
        assert added.locator("i").inner_text() == "1"  # the file's line

        # A second page on the same session (a browser of its own: the URL's token again)
        # sees the question waiting and answers it; the first page's menu goes.
        send(page, "write no.txt")
        page.wait_for_selector(".ask .title:has-text('no.txt')", timeout=WAIT)
        other = browser.new_page()  # type: ignore[attr-defined]
        other.goto(served.url)
        other.goto(page.url)
        other.wait_for_selector(".ask .title:has-text('no.txt')", timeout=WAIT)
        other.fill(".ask form.tell input", "put it in notes.md instead")
        other.click(".ask form.tell button")
        page.wait_for_selector(".ask", state="detached", timeout=WAIT)
        page.wait_for_selector("#log .answer:has-text('Understood')", timeout=WAIT)
        assert not (work / "no.txt").exists()
        told = model_server.requests_for("chat")[-1].all_text()
        assert "put it in notes.md instead" in told

        # Switch to the real codex-acp: the handoff is shown on both pages, each heading
        # says codex now, and codex is handed it.
        page.select_option("#switch", "codex")
        for each in (page, other):
            handoff = each.wait_for_selector("details.handoff pre", timeout=WAIT)
            assert "pelican" in handoff.inner_text()
            each.wait_for_selector("#provider:text('codex')", timeout=WAIT)
            assert each.locator("#switch").input_value() == "codex"
            assert each.locator("details.handoff").count() == 1
        other.close()
        send(page, "go on")
        page.wait_for_selector("#log .answer:has-text('Codex took over.')", timeout=WAIT)
        handed = model_server.requests_for("responses")[-1].all_text()
        assert "pelican" in handed and "go on" in handed

        # The live list shows it on codex now, idle; closed from its page, it is gone.
        page.click("nav >> text=Live sessions")
        row = page.wait_for_selector("tr.live", timeout=WAIT)
        assert "codex" in row.inner_text() and row.get_attribute("data-state") == "idle"
        row.query_selector("td.id a").click()  # type: ignore[union-attr]
        page.wait_for_selector("#log .answer:has-text('Codex took over.')", timeout=WAIT)
        page.click("#close")
        page.wait_for_selector("#log .line:has-text('the session was closed')", timeout=WAIT)
        page.click("nav >> text=Live sessions")
        page.wait_for_selector("p.empty:text('No live session.')", timeout=WAIT)

        # The library: a search finds the native session; it opens rendered; it exports.
        page.click("nav >> text=Library")
        page.fill("form.search input[name=q]", "pelican")
        page.click("form.search button")
        hit = page.wait_for_selector("tr.hit:has-text('native')", timeout=WAIT)
        assert hit.query_selector("mark") is not None
        hit.query_selector("td.id a").click()  # type: ignore[union-attr]
        page.wait_for_selector("section.msg.assistant pre.hl", timeout=WAIT)
        assert "tell me about the pelican" in page.inner_text("section.msg.user")
        with page.expect_download() as download:
            page.click("a.export:text('md')")
        saved = Path(download.value.path())
        assert "tell me about the pelican" in saved.read_text()


def test_a_library_session_opens_live_with_its_conversation(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(Reply.text("Noted: the walrus."), Reply.text("It was the walrus."))
    sid = talk(agent_home, "native", ["remember the walrus"])
    with web_server(avatar_env(agent_home), agent_home.workdir) as served, chromium() as browser:
        page = browser.new_page()  # type: ignore[attr-defined]
        page.goto(served.url)
        page.click(f"tr.session a:text('{sid[:12]}')")
        page.click("text=Open live")
        page.wait_for_selector(f"#log .line:has-text('{sid} (native, resumed)')", timeout=WAIT)
        earlier = page.inner_text("details.earlier")
        assert "remember the walrus" in earlier and "Noted: the walrus." in earlier
        send(page, "what was it?")
        page.wait_for_selector("#log .answer:has-text('It was the walrus.')", timeout=WAIT)
        asked = model_server.requests_for("chat")[-1].all_text()
        assert "remember the walrus" in asked and "what was it?" in asked


def test_a_session_live_from_a_terminal_shows_its_earlier_turns_once(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(
        Reply.text("Noted: the walrus."),
        Reply.slow_text(["It was ", "the ", "walrus", "."], delay=1.5),
    )
    sid = talk(agent_home, "native", ["remember the walrus"])
    elsewhere = agent_home.root / "elsewhere"  # the server's project is another one
    elsewhere.mkdir()
    env = avatar_env(agent_home)
    with web_server(env, elsewhere) as served, chromium() as browser:
        chat = start(env, agent_home.workdir, "chat", "--resume", sid, "what was it?")
        page = browser.new_page()  # type: ignore[attr-defined]
        page.goto(served.url)
        page.click("nav >> text=Live sessions")
        for _ in range(100):  # until the chat made it live (through the server)
            if page.locator("tr.live").count():
                break
            page.wait_for_timeout(100)
            page.reload()
        page.click(f"tr.live td.id a:text('{sid[:12]}')")
        page.wait_for_selector("#log .user:text('what was it?')", timeout=WAIT)
        assert chat.poll() is None  # (its turn still runs)
        page.wait_for_selector("#log .answer:has-text('It was the walrus.')", timeout=WAIT)
        out, err = chat.communicate(timeout=60)
        assert chat.returncode == 0, err
        assert "It was the walrus." in out
        # A page opened now, the turn in the session's store: the same, once each.
        other = browser.new_page()  # type: ignore[attr-defined]
        other.goto(served.url)
        other.goto(page.url)
        other.wait_for_selector("#log .answer:has-text('It was the walrus.')", timeout=WAIT)
        for each in (page, other):
            earlier = each.inner_text("details.earlier")
            assert "remember the walrus" in earlier and "Noted: the walrus." in earlier
            assert "what was it?" not in earlier
            shown = each.inner_text("main")  # (the sidebar lists the session by its title)
            for said in ("remember the walrus", "Noted: the walrus.", "what was it?"):
                assert shown.count(said) == 1, (said, shown)
            assert shown.count("It was the walrus.") == 1, shown

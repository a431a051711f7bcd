"""The web page's frame (issue 32), in a real headless Chromium at a desktop's and a phone's
width, the native agent behind the server against the fake model server: a sidebar of the
project's sessions, newest first, the one shown marked (at a phone's width folded behind a
button); the prompt box in view at the bottom of a long chat wherever the reader scrolls;
no page scrolling sideways; and a chat opened and never prompted leaving nothing behind —
when its page leaves it, when it is closed, when the server stops — while a prompted one
stays."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.support.drive import avatar, talk
from tests.support.homes import AgentHome, avatar_env
from tests.support.model_server import FakeModelServer, Reply
from tests.support.web import WAIT, WIDTHS, chromium, open_chat, page_at, send, sideways
from tests.support.web import web_server as serving

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def sidebar_titles(page: Any) -> list[str]:
    return [t.strip() for t in page.locator(".sidebar li .t").all_inner_texts()]


def current(page: Any) -> str:
    return str(page.locator(".sidebar li.current .t").inner_text()).strip()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_sidebar_lists_the_projects_sessions_newest_first(
    agent_home: AgentHome, model_server: FakeModelServer, width: int
) -> None:
    model_server.chat.append(
        Reply.text("Noted."), Reply.text("Noted too."), Reply.text("Elsewhere."), Reply.text("Yes.")
    )
    first = talk(agent_home, "native", ["the first topic"])
    talk(agent_home, "native", ["the second topic"])
    env = avatar_env(agent_home)
    other = agent_home.root / "other"
    other.mkdir()
    assert avatar(env, other, "-p", "native", "chat", "another project's topic").returncode == 0
    with serving(env, agent_home.workdir) as served, chromium() as browser:
        page = page_at(browser, width)
        page.goto(served.url)
        sidebar = page.locator(".sidebar")
        if width < 500:  # folded away until asked for
            assert not sidebar.is_visible() and sideways(page) == 0
            page.click("nav .sessions-open")
        assert sidebar.is_visible()
        assert sidebar_titles(page) == ["the second topic", "the first topic"]
        assert page.locator(".sidebar li.current").count() == 0  # (the whole library shown)

        page.click(".sidebar li a:has-text('the first topic')")
        page.wait_for_url(f"**/library/{first}")
        assert current(page) == "the first topic"
        page.click("text=Open live")
        page.wait_for_selector(f"#log .line:has-text('{first} (native, resumed)')", timeout=WAIT)
        if width < 500:
            assert not sidebar.is_visible()
            page.click("nav .sessions-open")
        assert current(page) == "the first topic"
        send(page, "go on")
        page.wait_for_selector("#log .answer:has-text('Yes.')", timeout=WAIT)
        page.reload()  # the session spoken in last comes first now
        assert sidebar_titles(page) == ["the first topic", "the second topic"]
        assert current(page) == "the first topic"
        assert sideways(page) == 0


@pytest.mark.parametrize("width", WIDTHS)
def test_the_prompt_box_stays_in_view_and_no_page_scrolls_sideways(
    agent_home: AgentHome, model_server: FakeModelServer, width: int
) -> None:
    long_answer = "\n".join(f"{n}. a line of the answer, said at some length" for n in range(40))
    wide = f"| {' | '.join(f'column_{n}_with_a_long_name' for n in range(8))} |"
    model_server.chat.append(
        *[Reply.text(long_answer) for _ in range(3)],
        Reply.text(f"{wide}\n|{'---|' * 8}\n{wide}\n\n```\n{'x' * 300}\n```"),
    )
    with serving(avatar_env(agent_home), agent_home.workdir) as served, chromium() as browser:
        page = page_at(browser, width)
        open_chat(page, served.url, "native")
        for n in range(4):
            send(page, f"prompt {n}")
            page.wait_for_selector(f"#log .answer >> nth={n}", timeout=WAIT)
            page.wait_for_selector("#state:text('idle')", timeout=WAIT)
        height = page.evaluate("window.innerHeight")
        assert page.evaluate("document.documentElement.scrollHeight") > 4 * height
        for where in ("0", "document.documentElement.scrollHeight / 2"):
            page.evaluate(f"window.scrollTo(0, {where})")
            box = page.locator("#prompt textarea").bounding_box()
            assert box is not None and box["y"] > 0 and box["y"] + box["height"] <= height
        assert page.evaluate(
            "document.elementFromPoint(innerWidth / 2, innerHeight - 5).closest('.composer')"
            " !== null"
        )
        assert sideways(page) == 0  # (a wide table and a long line of code: in their boxes)
        chat = page.url
        for path in ("/library", "/library?q=prompt", "/live", chat):
            page.goto(served.base + path if path.startswith("/") else path)
            page.wait_for_load_state("networkidle")
            assert sideways(page) == 0, path
        page.click("nav >> text=Library")
        page.click("tr.session td.id a")
        page.wait_for_selector("section.msg")
        page.wait_for_load_state("networkidle")  # (its stylesheet too, under load)
        assert sideways(page) == 0, page.url


def listed(env: dict[str, str], cwd: Any) -> list[str]:
    out = avatar(env, cwd, "session", "list", "--all", "--json")
    assert out.returncode == 0, out.stderr
    return [s["id"] for s in json.loads(out.stdout)]


@pytest.mark.parametrize("width", WIDTHS)
def test_a_chat_opened_and_never_prompted_leaves_nothing_behind(
    agent_home: AgentHome, model_server: FakeModelServer, width: int
) -> None:
    model_server.chat.append(Reply.text("Kept."))
    env, work = avatar_env(agent_home), agent_home.workdir
    with serving(env, work) as served, chromium() as browser:
        page = page_at(browser, width)
        kept = open_chat(page, served.url, "native")
        send(page, "keep this one")
        page.wait_for_selector("#log .answer:has-text('Kept.')", timeout=WAIT)

        # Opened, and left for the library.
        left = open_chat(page, served.url, "native")
        page.click("nav >> text=Library")
        for _ in range(300):  # until the server has noticed the page left (seconds)
            if left[:12] not in page.inner_text("main"):
                break
            page.wait_for_timeout(100)
            page.reload()
        assert left[:12] not in page.inner_text("main")
        assert kept[:12] in page.inner_text("main")

        # Opened, and closed from its page.
        closed = open_chat(page, served.url, "native")
        page.click("#close")
        page.wait_for_selector("#log .line:has-text('the session was closed')", timeout=WAIT)

        # Opened, and still open when the server stops.
        still = open_chat(page, served.url, "native")
        assert re.fullmatch(r"\w+", still)
    assert listed(env, work) == [kept]
    for gone in (left, closed, still):
        info = avatar(env, work, "session", "info", gone)
        assert info.returncode == 2 and "no session" in info.stderr.lower(), info.stderr
    assert avatar(env, work, "session", "info", kept).returncode == 0

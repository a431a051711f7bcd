"""Clickjacking (issue 32): a page on another port of 127.0.0.1 is the same site as avatar's
web page, so the SameSite=Strict cookie goes with the requests of a frame of it. The
attacker's page frames avatar's live list, invisible, over a decoy button placed where the
list's "Open" button is (the attacker can run avatar and measure its layout); the user, who
has avatar's page open (the cookie set), clicks the decoy. In a real headless Chromium, at a
desktop's and a phone's width: the frame shows nothing of avatar's page, and the click opens
no live session."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.homes import AgentHome, avatar_env
from tests.support.web import chromium, web_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


@contextlib.contextmanager
def attacker(html: str) -> Iterator[str]:
    """A web server on another port of 127.0.0.1 answering every GET with `html`: its URL."""

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = html.encode()
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def decoy(framed: str, width: int, height: int, x: float, y: float) -> str:
    """The attacker's page: `framed` in an invisible frame over the whole window, a button
    under the point (`x`, `y`) inviting a click."""
    return (
        "<!DOCTYPE html><html><body style='margin:0'>"
        f"<button id=decoy style='position:absolute;left:{x - 60}px;top:{y - 15}px;"
        "width:120px;height:30px'>Win a prize</button>"
        f"<iframe src='{framed}' style='position:absolute;left:0;top:0;border:0;"
        f"width:{width}px;height:{height}px;opacity:0.001;z-index:2'></iframe>"
        "</body></html>"
    )


@pytest.mark.parametrize("width", [1280, 390])
def test_a_page_on_another_port_cannot_frame_the_page(agent_home: AgentHome, width: int) -> None:
    viewport = {"width": width, "height": 800}
    with web_server(avatar_env(agent_home), agent_home.workdir) as served, chromium() as browser:
        context = browser.new_context(viewport=viewport)  # type: ignore[attr-defined]
        mine = context.new_page()
        mine.goto(served.url)  # the user's page: the cookie is set
        mine.goto(served.base + "/live")
        box = mine.locator("form.open button").bounding_box()
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2

        framed = served.base + "/live"
        with attacker(decoy(framed, width, 800, x, y)) as evil:
            page = context.new_page()
            page.goto(evil)
            page.wait_for_load_state("load")
            [frame] = [f for f in page.frames if f is not page.main_frame]
            # Nothing of avatar's page is in the frame: Chromium refused to show it.
            assert frame.locator("form.open").count() == 0
            assert "Live sessions" not in frame.evaluate("document.documentElement.innerText")
            page.mouse.click(x, y)
            page.wait_for_timeout(1500)  # (a click that got through opens a session by now)

        with httpx.Client(base_url=served.base, cookies={"avatar_token": served.token}) as http:
            live = http.get("/live").text
        assert "No live session." in live, "the click opened a session"

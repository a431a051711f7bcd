"""An answer on the web page as the terminal draws it (issue 32), in a real headless Chromium at
a desktop's and a phone's width, the native agent behind the server against the fake model
server: markdown rendered block by block while the answer still streams (a heading, a nested
numbered list, a table, highlighted code), the model's raw markup shown as text and never run
nor fetched, a link's address beside its text, a wide table scrolling in its own box and not
the page; a tool call one line that opens on its input and output, its edit a numbered diff
coloured and highlighted; an image attached to a prompt reaching the model and shown in the
prompt; the same answer rendered in the library."""

from __future__ import annotations

import threading

import pytest

from tests.support.homes import AgentHome, avatar_env
from tests.support.images import png_bytes
from tests.support.model_server import FakeModelServer, Reply
from tests.support.web import WAIT, WIDTHS, chromium, open_chat, page_at, send, sideways
from tests.support.web import web_server as serving

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

LONG = "orders_with_a_rather_long_table_name_nobody_can_break"
ANSWER = [
    "## The plan\n\nThe steps, in order:\n\n",
    "1. add the column\n2. backfill it\n   - in batches\n\n",
    f"| step | table | rows |\n|---|---|--:|\n| 1 | `{LONG}` | 12,345,678 |\n\n",
    "```python\ndef migrate():\n    return 1\n```\n\n",
    'Markup stays text: <img src=x onerror="window.pwned=1"> <script>window.pwned=2</script>\n\n',
    "See [the docs](https://example.com/guide) and ![a chart](http://127.0.0.1:9/leak.png)\n\n",
    "That is all.",  # (held back until the test has seen the rest drawn)
]


@pytest.mark.parametrize("width", WIDTHS)
def test_an_answer_is_drawn_as_the_terminal_draws_it(
    agent_home: AgentHome, model_server: FakeModelServer, width: int
) -> None:
    (agent_home.workdir / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    rest = threading.Event()
    model_server.chat.append(
        Reply.text("".join(ANSWER), chunks=ANSWER).held(rest),
        Reply.tool_call(
            "edit",
            {"path": "app.py", "old_text": "'hi ' + name", "new_text": "f'Hello, {name}!'"},
        ),
        Reply.text("Done."),
        Reply.text("A red square."),
    )
    with serving(avatar_env(agent_home), agent_home.workdir) as served, chromium() as browser:
        page = page_at(browser, width)
        open_chat(page, served.url, "native")
        send(page, "plan the migration")

        # Block by block: all but the last paragraph is drawn while the answer streams.
        answer = page.locator("#log .answer").first
        page.wait_for_selector(
            "#log .answer.streaming a[href='https://example.com/guide']", timeout=WAIT
        )
        assert answer.locator("h2").inner_text() == "The plan"
        items = answer.locator("ol > li")
        assert items.count() == 2 and items.nth(1).locator("ul > li").inner_text() == "in batches"
        assert answer.locator("table th").all_inner_texts() == ["step", "table", "rows"]
        assert answer.locator("td.align-right").inner_text() == "12,345,678"
        assert answer.locator("pre.hl .k").first.inner_text() == "def"  # highlighted
        assert "That is all." not in answer.inner_text()
        rest.set()
        page.wait_for_selector("#log .answer:not(.streaming) p:text('That is all.')", timeout=WAIT)
        assert answer.locator(".tail").count() == 0

        # The model's markup is text: nothing of it ran, nothing was fetched.
        shown = answer.inner_text()
        assert '<img src=x onerror="window.pwned=1"> <script>window.pwned=2</script>' in shown
        assert page.evaluate("window.pwned") is None
        assert answer.locator("img, script").count() == 0
        assert "the docs (https://example.com/guide)" in shown  # the address beside its text
        assert "🖼 a chart (http://127.0.0.1:9/leak.png)" in shown  # an image: never fetched

        # Markup that slipped through would neither run nor fetch: the page's CSP.
        page.evaluate(
            """() => {
                window.blocked = [];
                document.addEventListener("securitypolicyviolation",
                                          (e) => window.blocked.push(e.violatedDirective));
                document.getElementById("log").insertAdjacentHTML("beforeend",
                    '<img src="http://127.0.0.1:9/leak.png" onerror="window.pwned = 3">');
            }"""
        )
        for _ in range(600):  # until Chromium reported both refusals
            if {"img-src", "script-src-attr"} <= set(page.evaluate("window.blocked")):
                break
            page.wait_for_timeout(50)
        assert {"img-src", "script-src-attr"} <= set(page.evaluate("window.blocked"))
        assert page.evaluate("window.pwned") is None
        page.evaluate("document.querySelector('#log > img').remove()")

        # Nothing widens the page; at a phone's width the table scrolls in its own box.
        assert sideways(page) == 0
        box = answer.locator(".table")
        if width < 500:
            assert box.evaluate("b => b.scrollWidth > b.clientWidth")
        page.wait_for_selector("#state:text('idle')", timeout=WAIT)

        # A tool call: one line, its input and output inside; its edit a diff below it.
        send(page, "make greet friendlier")
        page.click(".ask button.allow", timeout=WAIT)
        page.wait_for_selector("#log .answer:has-text('Done.')", timeout=WAIT)
        tool = page.locator("#log .tool").first
        line = tool.locator("summary")
        assert line.inner_text().startswith("✓ edit")
        output = tool.locator("pre.output")
        assert not output.is_visible() and not tool.locator("pre.input").is_visible()
        line.click()
        assert output.is_visible() and '"old_text"' in tool.locator("pre.input").inner_text()
        removed, added = tool.locator(".diff .del"), tool.locator(".diff .add")
        assert removed.locator("i").inner_text() == "2" and added.locator("i").inner_text() == "2"
        assert added.locator(".k").inner_text() == "return"  # highlighted as Python
        colours = {
            row.evaluate("r => getComputedStyle(r).backgroundColor") for row in (removed, added)
        }
        assert len(colours) == 2 and "rgba(0, 0, 0, 0)" not in colours
        assert sideways(page) == 0
        page.wait_for_selector("#state:text('idle')", timeout=WAIT)

        # An image attached to a prompt: the model gets it, the prompt shows it.
        png = png_bytes()
        page.set_input_files(
            "#prompt input[type=file]",
            files=[{"name": "shot.png", "mimeType": "image/png", "buffer": png}],
        )
        page.wait_for_selector("#attached img")
        send(page, "what is this?")
        page.wait_for_selector("#log .answer:has-text('A red square.')", timeout=WAIT)
        sent = [i for r in model_server.requests_for("chat") if r.is_main for i in r.images()]
        assert sent == [("image/png", png)]
        user = page.locator("#log .user").last
        assert user.locator("img").evaluate("i => i.complete && i.naturalWidth") == 4
        assert user.inner_text().strip() == "what is this?"
        assert page.locator("#attached img").count() == 0  # (sent with that prompt only)

        # The library shows the session's answers rendered the same way.
        session = page.inner_text("#session")
        page.goto(f"{served.base}/library/{session}")
        shown_there = page.locator("section.msg.assistant .md").first
        assert shown_there.locator("h2").inner_text() == "The plan"
        assert shown_there.locator("table td.align-right").inner_text() == "12,345,678"
        assert shown_there.locator("img, script").count() == 0
        assert sideways(page) == 0

"""Regenerate the pictures of the web page in docs/ from the real page.

    .venv/bin/python docs/make_web_pictures.py

It runs the installed `avatar serve --web` against the test kit's fake model server (no
network, no keys), with the native agent and the real codex-acp from bridges/, drives Debian's
headless Chromium through Playwright (tests/support/web.py) as a person would, and saves
screenshots as docs/web-*.png.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests.support.drive import talk  # noqa: E402
from tests.support.homes import AgentHome, avatar_env  # noqa: E402
from tests.support.model_server import FakeModelServer, Reply  # noqa: E402
from tests.support.web import chromium, web_server  # noqa: E402

VIEWPORT = {"width": 1100, "height": 600}
WAIT = 60_000


def save(page: Any, name: str) -> None:
    """The page as docs/<name>.png."""
    page.screenshot(path=str(HERE / f"{name}.png"), full_page=True)
    print(f"wrote docs/{name}.png")


def scenes(home: AgentHome, server: FakeModelServer) -> None:
    (home.workdir / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    for prompt, answer in (
        ("plan the database migration", "Three steps: add the column, backfill, switch reads."),
        ("why is the login test flaky?", "It races the session cookie: wait for the redirect."),
    ):
        server.chat.append(Reply.text(answer))
        talk(home, "native", [prompt])
    server.chat.append(
        Reply.tool_call(
            "edit",
            {
                "path": "app.py",
                "old_text": "    return 'hi ' + name",
                "new_text": "    return f'Hello, {name}!'",
            },
        ),
        Reply.text(
            "`greet` built its string with `+`; an **f-string** reads better:\n\n"
            "```python\ndef greet(name):\n    return f'Hello, {name}!'\n```"
        ),
        Reply.tool_call("write", {"path": "CHANGELOG.md", "content": "## 0.2\n- greet\n"}),
        Reply.text("Done: the changelog says so."),
    )
    server.script("responses", Reply.text("Picked up from the native session: greet is done."))
    with web_server(avatar_env(home), home.workdir) as served, chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)  # type: ignore[attr-defined]
        page.goto(served.url)
        page.click("nav >> text=Live sessions")
        page.select_option("form.open select[name=provider]", "native")
        page.click("form.open button")
        page.wait_for_selector("#log .line", timeout=WAIT)
        page.fill("#prompt textarea", "make greet friendlier")
        page.click("#prompt button")
        page.click(".ask button.allow", timeout=WAIT)
        page.wait_for_selector("#log .answer pre.hl", timeout=WAIT)
        page.wait_for_selector("#state:text('idle')", timeout=WAIT)
        page.fill("#prompt textarea", "add a changelog entry")
        page.click("#prompt button")
        page.wait_for_selector(".ask", timeout=WAIT)
        save(page, "web-chat")
        page.click(".ask button.allow")
        page.wait_for_selector("#log .answer:has-text('Done')", timeout=WAIT)
        page.select_option("#switch", "codex")
        page.wait_for_selector("details.handoff", timeout=WAIT)
        page.fill("#prompt textarea", "anything left?")
        page.click("#prompt button")
        page.wait_for_selector("#log .answer:has-text('Picked up')", timeout=WAIT)
        save(page, "web-switch")
        page.click("nav >> text=Live sessions")
        page.wait_for_selector("tr.live", timeout=WAIT)
        save(page, "web-live")
        page.click("nav >> text=Library")
        page.fill("form.search input[name=q]", "login")
        page.click("form.search button")
        page.wait_for_selector("tr.hit", timeout=WAIT)
        save(page, "web-search")
        page.click("tr.hit td.id a")
        page.wait_for_selector("section.msg", timeout=WAIT)
        save(page, "web-session")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer() as server:
        scenes(AgentHome(Path(tmp), server), server)


if __name__ == "__main__":
    main()

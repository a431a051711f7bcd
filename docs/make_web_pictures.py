"""Regenerate the pictures of the web page in docs/ from the real page.

    .venv/bin/python docs/make_web_pictures.py

It runs the installed `avatar serve --web` against the test kit's fake model server (no
network, no keys), with the native agent and the real codex-acp from bridges/, drives Debian's
headless Chromium through Playwright (tests/support/web.py) as a person would, and saves
each page at a desktop's width (1280 px) and a phone's (390 px) as docs/web-<page>-<width>.png:
the window as the person sees it, not the whole page, so that the files stay small.
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

#: The widths pictured, each with its window's height.
SIZES = {1280: 800, 390: 844}
WAIT = 60_000

ANSWER = """\
## What changed

`greet` built its string with `+`; an **f-string** reads better:

```python
def greet(name):
    return f'Hello, {name}!'
```

| call | before | after |
|---|---|---|
| `greet('Ada')` | `hi Ada` | `Hello, Ada!` |
| `greet('')` | `hi ` | `Hello, !` |

1. the edit is in `app.py`
2. nothing else calls `greet`
"""


def save(pages: dict[int, Any], name: str, url: str | None = None) -> None:
    """Each page of `pages` (by width), at `url` when given, as docs/<name>-<width>.png."""
    for width, page in pages.items():
        if url is not None:
            page.goto(url)
            page.wait_for_load_state("networkidle")
        path = HERE / f"{name}-{width}.png"
        page.screenshot(path=str(path))
        print(f"wrote docs/{path.name} ({path.stat().st_size // 1024} KB)")


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
        Reply.text(ANSWER),
        Reply.tool_call("write", {"path": "CHANGELOG.md", "content": "## 0.2\n- greet\n"}),
        Reply.text("Done: the changelog says so."),
    )
    server.script("responses", Reply.text("Picked up from the native session: greet is done."))
    with web_server(avatar_env(home), home.workdir) as served, chromium() as browser:
        pages = {
            width: browser.new_context(  # type: ignore[attr-defined]
                viewport={"width": width, "height": height}
            ).new_page()
            for width, height in SIZES.items()
        }
        for page in pages.values():
            page.goto(served.url)  # (the token becomes each one's cookie)
        page = pages[1280]
        page.click("nav >> text=Live sessions")
        page.select_option("form.open select[name=provider]", "native")
        page.click("form.open button")
        page.wait_for_selector("#log .line", timeout=WAIT)
        page.fill("#prompt textarea", "make greet friendlier")
        page.click("#prompt button.send")
        page.click(".ask button.allow", timeout=WAIT)
        page.wait_for_selector("#log .answer table", timeout=WAIT)
        page.wait_for_selector("#state:text('idle')", timeout=WAIT)
        page.fill("#prompt textarea", "add a changelog entry")
        page.click("#prompt button.send")
        page.wait_for_selector(".ask", timeout=WAIT)
        chat = page.url
        pages[390].goto(chat)
        pages[390].wait_for_selector(".ask", timeout=WAIT)
        pages[390].evaluate("window.scrollTo(0, document.body.scrollHeight)")
        save(pages, "web-chat")
        page.click(".ask button.allow")
        page.wait_for_selector("#log .answer:has-text('Done')", timeout=WAIT)
        page.select_option("#switch", "codex")
        page.wait_for_selector("details.handoff", timeout=WAIT)
        page.fill("#prompt textarea", "anything left?")
        page.click("#prompt button.send")
        page.wait_for_selector("#log .answer:has-text('Picked up')", timeout=WAIT)
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        save({1280: page}, "web-switch")
        save(pages, "web-live", served.base + "/live")
        save(pages, "web-library", served.base + "/library")
        save(pages, "web-search", served.base + "/library?q=login")
        for each in pages.values():
            each.click("tr.hit td.id a")
            each.wait_for_selector("section.msg", timeout=WAIT)
        save(pages, "web-session")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer() as server:
        scenes(AgentHome(Path(tmp), server), server)


if __name__ == "__main__":
    main()

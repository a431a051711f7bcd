"""The web page in tests: `avatar serve --web` started, its URL read off its output, and a
real headless Chromium (tests/support/browser.py) driven by Playwright's Python API with
that executable (no browser download)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.browser import find_browser, headless_flags
from tests.support.served import serving, terminate

#: The line the server prints: the page's address with its token.
URL_LINE = re.compile(r"(http://127\.0\.0\.1:(\d+)/\?token=([\w-]+))")
#: The widths the page is tried at: a desktop's and a phone's (an iPhone 12-15's 390 px).
WIDTHS = (1280, 390)
WAIT = 60_000  # ms: an agent's turn on 2 busy cores


@dataclass(frozen=True)
class Served:
    """A running web server: the URL it printed (token included), and its process id."""

    url: str
    pid: int

    @property
    def base(self) -> str:
        """The address without the token."""
        return self.url.split("/?")[0]

    @property
    def token(self) -> str:
        """The token of the printed URL."""
        return self.url.rsplit("=", 1)[1]


@contextlib.contextmanager
def web_server(env: dict[str, str], cwd: Path, *args: str) -> Iterator[Served]:
    """`avatar serve --web ARGS` in `cwd` with `env`; what it printed while it runs. Stopped
    by SIGTERM, as a supervisor stops it."""
    with serving(env, cwd, "--web", *args) as proc:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = URL_LINE.search(line)
        assert found, f"no URL: {line!r}"
        try:
            yield Served(found.group(1), proc.pid)
        finally:
            terminate(proc)
            proc.wait(20)


@contextlib.contextmanager
def chromium() -> Iterator[object]:
    """A headless Chromium (Debian's) under Playwright: its `Browser`."""
    from playwright.sync_api import sync_playwright

    executable = find_browser()
    assert executable, "no Chromium installed (.ci/run installs Debian's chromium)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable,
            headless=True,
            # The kit's flags; Playwright gives the profile and the headless mode itself.
            args=[
                flag
                for flag in headless_flags(Path())
                if not flag.startswith(("--headless", "--user-data-dir"))
            ],
        )
        try:
            yield browser
        finally:
            browser.close()


def page_at(browser: Any, width: int, height: int = 800) -> Any:
    """A new page `width` px wide in a browser context of its own (its own cookies)."""
    return browser.new_context(viewport={"width": width, "height": height}).new_page()


def open_chat(page: Any, url: str, provider: str) -> str:
    """From the printed `url`, a new live chat on `provider` opened as a person opens one
    (Live sessions, the form); the session's id once the page shows it opened."""
    page.goto(url)
    assert page.url.endswith("/library")  # the token became a cookie, and left the address
    page.click("nav >> text=Live sessions")
    page.select_option("form.open select[name=provider]", provider)
    page.click("form.open button")
    page.wait_for_url(re.compile(r"/chat/"), timeout=WAIT)
    page.wait_for_selector(f"#log .line:has-text('({provider}, new)')", timeout=WAIT)
    return str(page.inner_text("#session"))


def send(page: Any, text: str) -> None:
    """Type `text` in the chat's prompt box and send it."""
    page.fill("#prompt textarea", text)
    page.click("#prompt button.send")


def sideways(page: Any) -> int:
    """How many pixels the page scrolls sideways (0: it fits its window)."""
    return int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth"))

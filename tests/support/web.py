"""The web page in tests: `avatar serve --web` started, its URL read off its output, and a
real headless Chromium (tests/support/browser.py) driven by Playwright's Python API with
that executable (no browser download)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.browser import find_browser, headless_flags
from tests.support.served import serving, terminate

#: The line the server prints: the page's address with its token.
URL_LINE = re.compile(r"(http://127\.0\.0\.1:(\d+)/\?token=([\w-]+))")


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

"""The web page in tests: the server started as `avatar serve --web` would start it, its URL
read off its output, and a real headless Chromium (tests/support/browser.py) driven by
Playwright's Python API with that executable (no browser download)."""

from __future__ import annotations

import asyncio
import contextlib
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.browser import find_browser

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
def web_server(env: dict[str, str], cwd: Path, log: Path | None = None) -> Iterator[Served]:
    """Start the web server in `cwd` with `env`; what it printed while it runs.
    Its stderr goes to `log` (default: `web-server.log` beside `cwd`), shown on failure."""
    log = log or cwd.parent / "web-server.log"
    errors = log.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.web", "serve"],
        env={**env, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=errors,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = URL_LINE.search(line)
        assert found, f"no URL: {line!r}\n{log.read_text()}"
        try:
            yield Served(found.group(1), proc.pid)
        except BaseException:
            print(f"web server's stderr:\n{log.read_text()}")
            raise
    finally:
        errors.close()
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


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
            args=[
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            yield browser
        finally:
            browser.close()


async def _serve() -> None:
    from avatar.server.hub import Hub
    from avatar.server.web.run import start

    hub = Hub()
    server = await start(hub, Path.cwd())
    print(server.url, flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()
        await hub.close()


if __name__ == "__main__" and sys.argv[1:] == ["serve"]:
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve())

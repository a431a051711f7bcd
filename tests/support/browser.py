"""A real Chromium for tests, run headless on a machine with no screen and no network: Debian's
`chromium` (the desktop browser) or `chromium-headless-shell`, whichever is installed.

`.ci/run` installs `chromium` from the distribution's packages. The flags are what a closed
machine needs: no X server (`--headless`), root without a user namespace for Chromium's own
sandbox (`--no-sandbox`), and no background connections, each of which would be refused and
retried (`--disable-background-networking`, `--disable-component-update`, `--disable-sync`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

#: The programs tried, in order.
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")


def find_browser() -> str | None:
    """The first Chromium installed, or None."""
    return next((found for found in map(shutil.which, BROWSERS) if found), None)


def headless_flags(profile: Path) -> list[str]:
    """The command-line flags for one headless run with its own empty profile `profile`."""
    return [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
    ]

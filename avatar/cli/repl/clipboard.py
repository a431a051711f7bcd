"""An image on the system clipboard, for Ctrl-V in the REPL (as Claude Code's Ctrl-V).

A terminal pastes text only: copying an image and pressing the terminal's paste key sends
nothing (or the image's address), and OSC 52 carries text too (most terminals refuse to let
a program read the clipboard with it at all). So avatar asks the clipboard itself, with the
desktop's own tool: `wl-paste` under Wayland (`WAYLAND_DISPLAY`), `xclip` under X11
(`DISPLAY`), `pngpaste` or `osascript` on macOS. That reaches the clipboard of the machine
avatar runs on: over ssh there is none, and a dropped file's path (pasted as text) is the way.

The tool runs outside the walls, as the user's own program, found on `PATH` outside the
project (`Engine.user_program`: an agent cannot plant one there), with the REPL's
environment; it reads the clipboard and nothing else.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence

from avatar.core.errors import UsageError

#: Seconds a clipboard tool may take (a clipboard owner that hangs must not hang the REPL).
TIMEOUT = 5.0
_PREFERRED = ("image/png", "image/jpeg", "image/gif", "image/webp")


def _run(argv: Sequence[str], env: Mapping[str, str]) -> bytes | None:
    try:
        done = subprocess.run(
            list(argv), capture_output=True, timeout=TIMEOUT, env=dict(env), check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _choose(types: bytes | None) -> str | None:
    offered = (types or b"").decode("utf-8", "replace").split()
    return next((t for t in _PREFERRED if t in offered), None)


def clipboard_image(
    find: Callable[[str], str | None], env: Mapping[str, str] | None = None
) -> bytes:
    """The bytes of the image on the clipboard (`find`: where a tool is); a `UsageError`
    saying what was looked at when there is none (or no tool to ask)."""
    env = os.environ if env is None else env
    if env.get("WAYLAND_DISPLAY") and (tool := find("wl-paste")):
        mime = _choose(_run([tool, "--list-types"], env))
        data = _run([tool, "--no-newline", "--type", mime], env) if mime else None
        return _found(data, "wl-paste")
    if env.get("DISPLAY") and (tool := find("xclip")):
        base = [tool, "-selection", "clipboard", "-o"]
        mime = _choose(_run([*base, "-t", "TARGETS"], env))
        return _found(_run([*base, "-t", mime], env) if mime else None, "xclip")
    if sys.platform == "darwin":
        if tool := find("pngpaste"):
            return _found(_run([tool, "-"], env), "pngpaste")
        if tool := find("osascript"):
            out = _run([tool, "-e", "the clipboard as «class PNGf»"], env)
            return _found(_osascript_png(out), "osascript")
    raise UsageError(
        "no clipboard to read an image from: Ctrl-V needs wl-paste (Wayland), xclip (X11) or "
        "pngpaste (macOS); a dropped or pasted file path attaches the image too"
    )


def _found(data: bytes | None, tool: str) -> bytes:
    if not data:
        raise UsageError(
            f"no image on the clipboard ({tool} found none; text pastes with the terminal's "
            "own paste key)"
        )
    return data


def _osascript_png(out: bytes | None) -> bytes | None:
    """The bytes of osascript's `«data PNGf89504E…»` answer."""
    text = (out or b"").decode("utf-8", "replace").strip()
    start = text.find("PNGf")
    if not text.startswith("«data") or start < 0:
        return None
    try:
        return bytes.fromhex(text[start + 4 :].rstrip("»"))
    except ValueError:
        return None

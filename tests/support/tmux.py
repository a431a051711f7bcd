"""A real terminal for end-to-end tests: the program runs in tmux, and tests read the screen
a person would see (`capture-pane`), with or without its colours.

Each `Terminal` has its own tmux server (a socket in a temporary directory), so tests never
touch a developer's tmux and can run side by side.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

TMUX = "tmux"
#: Seconds a program may take to end once its terminal has closed.
OUTLIVE = 15.0


def _ends(pid: int, within: float) -> bool:
    """Whether process `pid` is gone (or a zombie) within `within` seconds."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


class Terminal:
    """`argv` running in a `width`×`height` terminal."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        *,
        width: int = 120,
        height: int = 40,
    ) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="avatar-tmux-")
        self.socket = str(Path(self._dir.name) / "sock")
        # A colour terminal, as a person has (the test kit's NO_COLOR is for pipes).
        self.env = {k: v for k, v in env.items() if k != "NO_COLOR"} | {
            "TERM": env.get("TERM_FOR_TEST", "xterm-256color")
        }
        command = " ".join(shlex.quote(a) for a in argv)
        # `remain-on-exit` keeps the last screen readable after the program ends.
        self._tmux(
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            str(width),
            "-y",
            str(height),
            "-c",
            str(cwd),
            command,
        )
        self._tmux("set-option", "-t", "t", "remain-on-exit", "on")

    def _tmux(self, *args: str) -> str:
        out = subprocess.run(
            [TMUX, "-S", self.socket, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        return out.stdout

    def type(self, text: str, *, enter: bool = True) -> None:
        """Type `text` (literally), then Enter."""
        if text:
            self._tmux("send-keys", "-t", "t", "-l", text)
        if enter:
            self._tmux("send-keys", "-t", "t", "Enter")

    def paste(self, text: str) -> None:
        """Paste `text` as a terminal does when a file is dropped on it or text is pasted
        (bracketed paste). (Through a file: `set-buffer` refuses a long text.)"""
        held = Path(self._dir.name) / "pasted"
        held.write_text(text, encoding="utf-8")
        self._tmux("load-buffer", str(held))
        self._tmux("paste-buffer", "-p", "-t", "t")

    def keys(self, *keys: str) -> None:
        """Press keys by tmux name: `C-c`, `Escape`, `Enter`, `Up`, `Tab` …"""
        self._tmux("send-keys", "-t", "t", *keys)

    def screen(self, *, colours: bool = False) -> str:
        """The visible screen, one line per row (ANSI escapes kept with `colours`)."""
        args = ["capture-pane", "-p", "-t", "t"] + (["-e"] if colours else [])
        return self._tmux(*args)

    def history(self) -> str:
        """Everything the program has shown, scrolled off the screen or not: the scrollback
        and the screen, one line per row, trailing blank rows dropped."""
        return self._tmux("capture-pane", "-p", "-t", "t", "-S", "-").rstrip("\n") + "\n"

    def wait_for(self, pattern: str, timeout: float = 30.0, *, colours: bool = False) -> str:
        """Wait until `pattern` (a regex) is on the screen; returns the screen."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern, re.M)
        while True:
            text = self.screen(colours=colours)
            if regex.search(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} not on screen after {timeout}s:\n{text}")
            time.sleep(0.1)

    def wait_gone(self, pattern: str, timeout: float = 30.0) -> str:
        """Wait until `pattern` is no longer on the screen; returns the screen."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern, re.M)
        while True:
            text = self.screen()
            if not regex.search(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} still on screen after {timeout}s:\n{text}")
            time.sleep(0.1)

    def output_during(self, seconds: float) -> bytes:
        """What the program writes to the terminal in the next `seconds` (redraws included)."""
        sink = Path(self._dir.name) / "output"
        self.pipe_output(sink)
        time.sleep(seconds)
        self.stop_output()
        return sink.read_bytes()

    def pipe_output(self, sink: Path) -> None:
        """From now on, append what the program writes to the terminal to `sink` (emptied)."""
        sink.write_bytes(b"")
        self._tmux("pipe-pane", "-o", "-t", "t", f"cat >> {shlex.quote(str(sink))}")

    def stop_output(self) -> None:
        """Stop `pipe_output`."""
        self._tmux("pipe-pane", "-t", "t")  # (no command: stop piping)

    def focus(self, focused: bool) -> None:
        """What a terminal sends a program that asked for focus reports when its window
        gains (`CSI I`) or loses (`CSI O`) the focus."""
        self._tmux("send-keys", "-t", "t", "-H", "1b", "5b", "49" if focused else "4f")

    def record(self) -> None:
        """From now on keep what the program writes to the terminal, bells and OSC sequences
        included (`recorded`)."""
        sink = Path(self._dir.name) / "recorded"
        sink.write_bytes(b"")
        self._tmux("pipe-pane", "-o", "-t", "t", f"cat >> {shlex.quote(str(sink))}")

    def recorded(self) -> bytes:
        """What the program wrote since `record`."""
        return (Path(self._dir.name) / "recorded").read_bytes()

    def title(self) -> str:
        """The pane's title, as the program may have set it (OSC 0 / OSC 2)."""
        return self._tmux("display-message", "-p", "-t", "t", "#{pane_title}").strip()

    def pid(self) -> int:
        """The pid of the program running in the pane."""
        return int(self._tmux("display-message", "-p", "-t", "t", "#{pane_pid}").strip())

    def dead(self) -> bool:
        """True once the program has exited."""
        return self._tmux("display-message", "-p", "-t", "t", "#{pane_dead}").strip() == "1"

    def close(self) -> None:
        """Stop the terminal and its tmux server; the program in it must end with it, as a
        program does when its terminal closes (AssertionError, after killing it, when it
        still runs `OUTLIVE` seconds later)."""
        try:
            shown = self._tmux("display-message", "-p", "-t", "t", "#{pane_dead} #{pane_pid}")
            dead, pid = shown.split()
            program = None if dead == "1" else int(pid)
        except (ValueError, subprocess.SubprocessError):  # (no pane any more)
            program = None
        subprocess.run([TMUX, "-S", self.socket, "kill-server"], env=self.env, capture_output=True)
        self._dir.cleanup()
        if program is not None and not _ends(program, OUTLIVE):
            with contextlib.suppress(ProcessLookupError):
                os.kill(program, signal.SIGKILL)
            raise AssertionError(f"pid {program} still ran {OUTLIVE} s after its terminal closed")

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

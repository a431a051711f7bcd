"""`inert`: what reaches a terminal from a model, an agent or a session file holds no control
character a terminal would obey, and text without any is left exactly as it was."""

from __future__ import annotations

import io
import os
import re

from hypothesis import given
from hypothesis import strategies as st

from avatar.policy.terminal_text import for_terminal, inert

# What a terminal obeys: C0 (but tab and newline), DEL, C1; and no lone surrogate.
OBEYED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
ESCAPES = st.sampled_from(
    [
        "\x1b]0;owned\x07",  # OSC 0: window title
        "\x1b]2;owned\x1b\\",  # OSC 2, ST-terminated
        "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",  # OSC 8 link
        "\x1b[2J\x1b[H",  # clear the screen, cursor home
        "\x1b[5A\x1b[K",  # cursor up, erase line
        "\x1bP+q544e\x1b\\",  # DCS
        "\x1b_apc\x1b\\",  # APC
        "\x1b^pm\x1b\\",  # PM
        "\x9b31m",  # C1 CSI
        "\x9d0;t\x9c",  # C1 OSC … ST
        "\x07",
        "\x08\x08\x08",
        "safe\rEVIL",
        "\x1b",
        "\ud800",
    ]
)
TEXT = st.lists(st.text() | ESCAPES).map("".join)


@given(TEXT)
def test_nothing_a_terminal_obeys_gets_through(text: str) -> None:
    out = inert(text)
    assert OBEYED.search(out) is None
    assert out.count("\n") == text.count("\n") and out.count("\t") == text.count("\t")
    out.encode("utf-8")  # printable as UTF-8, whatever came in


@given(st.text().filter(lambda t: OBEYED.search(t) is None))
def test_text_without_controls_is_left_as_it_is(text: str) -> None:
    assert inert(text) is text


def test_escapes_read_as_what_they_are() -> None:
    assert inert("a\x1b]0;t\x07b") == "a^[]0;t^Gb"
    assert inert("x\x9b2J") == "x\\x9b2J"
    assert inert("ok\rno") == "ok^Mno"
    assert inert("line\r\nnext") == "line\nnext"
    assert inert("odd \ud800") == "odd \\ud800"


def test_for_terminal_leaves_data_alone() -> None:
    text = "a\x1b[2Jb"
    assert for_terminal(text, io.StringIO()) == text  # a pipe or a file: data
    read, write = os.openpty()
    try:
        with open(write, "w", closefd=False) as tty:
            assert for_terminal(text, tty) == "a^[[2Jb"
    finally:
        os.close(read)
        os.close(write)

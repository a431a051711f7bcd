"""Regenerate the pictures of the REPL in docs/ from real terminal captures.

    .venv/bin/python docs/make_pictures.py

Each scene runs the installed `avatar` in tmux against the test kit's fake model server (no
network, no keys), captures the screen with its colours, and writes it as SVG through rich.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from rich.console import Console  # noqa: E402
from rich.text import Text  # noqa: E402

from tests.support.homes import AgentHome, avatar_env  # noqa: E402
from tests.support.model_server import FakeModelServer, Reply  # noqa: E402
from tests.support.tmux import Terminal  # noqa: E402

AVATAR = str(Path(sys.executable).parent / "avatar")
WIDTH, HEIGHT = 100, 26


def save(term: Terminal, name: str, title: str) -> None:
    """The terminal's screen, colours and all, as docs/<name>.svg."""
    lines = term.screen(colours=True).rstrip("\n").split("\n")
    console = Console(
        record=True, width=WIDTH, force_terminal=True, color_system="256", file=io.StringIO()
    )
    console.print(Text.from_ansi("\n".join(lines[:HEIGHT])), soft_wrap=True)
    console.save_svg(str(HERE / f"{name}.svg"), title=title)
    print(f"wrote docs/{name}.svg")


def turn_with_a_tool(home: AgentHome, server: FakeModelServer) -> None:
    (home.workdir / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n")
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
            "I switched `greet` to an **f-string**:\n\n```python\ndef greet(name):\n"
            "    return f'Hello, {name}!'\n```\n\nRun the tests to check it."
        ),
    )
    with Terminal(
        [AVATAR, "-p", "native", "repl", "--permission", "allow"],
        avatar_env(home),
        home.workdir,
        width=WIDTH,
        height=HEIGHT,
    ) as term:
        term.wait_for(r"^›")
        term.type("make greet friendlier")
        term.wait_for(r"^─ \d")
        save(term, "repl-turn", "avatar: a native turn with an edit")


def picker(home: AgentHome, server: FakeModelServer) -> None:
    env = avatar_env(home)
    for prompt in ("plan the database migration", "fix the flaky login test", "write docs"):
        server.chat.append(Reply.text("ok"))
        subprocess.run(
            [AVATAR, "-p", "native", "chat", prompt],
            env=env,
            cwd=home.workdir,
            capture_output=True,
            check=True,
        )
    with Terminal(
        [AVATAR, "-p", "native", "repl"], env, home.workdir, width=WIDTH, height=HEIGHT
    ) as term:
        term.wait_for(r"^›")
        term.type("/resume")
        term.wait_for("plan the database migration")
        term.type("log", enter=False)
        term.wait_for(r"resume › log")
        save(term, "repl-picker", "avatar: /resume picks a session")


def permission(home: AgentHome, server: FakeModelServer) -> None:
    server.chat.append(
        Reply.tool_call(
            "write", {"path": "CHANGELOG.md", "content": "## 0.2\n- friendlier greet\n"}
        ),
        Reply.text("Done."),
    )
    with Terminal(
        [AVATAR, "-p", "native", "repl"], avatar_env(home), home.workdir, width=WIDTH, height=HEIGHT
    ) as term:
        term.wait_for(r"^›")
        term.type("add a changelog entry")
        term.wait_for(r"\[y\] allow once")
        save(term, "repl-permission", "avatar: the permission menu")


def main() -> None:
    if shutil.which("tmux") is None:
        sys.exit("docs/make_pictures.py needs tmux")
    for scene in (turn_with_a_tool, picker, permission):
        with tempfile.TemporaryDirectory() as tmp, FakeModelServer() as server:
            scene(AgentHome(Path(tmp), server), server)


if __name__ == "__main__":
    main()

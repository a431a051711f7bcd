"""`session export` (md, json, html) and `session fork --at N` on real native sessions, made by
the installed `avatar` against the fake model server.

The HTML is checked by parsing its DOM with the standard library's `html.parser`: one
self-contained page, tool calls in `<details>`, code blocks highlighted, nothing fetched from
the network. Where a Chromium is installed (`.ci/run` installs Debian's `chromium`), the page
is also rendered by it, headless: the DOM it builds and a screenshot.
"""

from __future__ import annotations

import json
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.support.browser import find_browser, headless_flags
from tests.support.drive import avatar
from tests.support.model_server import FakeModelServer, Reply

SESSION_LINE = re.compile(r"^session: (\S+) \(native, (\w+)\)$", re.M)
OPENAI_KEY = "sk-test-EXPORTSECRET0123456789abcdef"
SERVICE_TOKEN = "tok-avatar-export-secret-42"
CODE_ANSWER = "Here it is:\n\n```python\ndef greet():\n    return 'hi'\n```\n\nDone."


def session_id(stderr: str) -> str:
    match = SESSION_LINE.search(stderr)
    assert match, stderr
    return match.group(1)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    (p / "notes.txt").write_text(f"the token is {SERVICE_TOKEN}\n")
    return p


@pytest.fixture
def env(avatar_env: dict[str, str]) -> dict[str, str]:
    return {**avatar_env, "OPENAI_API_KEY": OPENAI_KEY, "MY_SERVICE_TOKEN": SERVICE_TOKEN}


class Dom(HTMLParser):
    """Tags, attributes and text of a page, and the text inside each `<details>`."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.details: list[str] = []
        self._depth = 0
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "details":
            self._depth += 1
            if self._depth == 1:
                self.details.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "details":
            self._depth -= 1

    def handle_data(self, data: str) -> None:
        self.text += data
        if self._depth:
            self.details[-1] += data


def test_export_md_json_html_with_a_tool_call(
    env: dict[str, str], project: Path, model_server: FakeModelServer
) -> None:
    model_server.script("chat", Reply.tool_call("read", {"path": "notes.txt"}), CODE_ANSWER)
    made = avatar(env, project, "-p", "native", "chat", f"read notes.txt; my key {OPENAI_KEY}")
    assert made.returncode == 0, made.stderr
    sid = session_id(made.stderr)

    out = avatar(env, project, "session", "export", sid[:10], "--format", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["v"] == 1
    assert doc["session"]["id"] == sid and doc["session"]["provider"] == "native"
    assert set(doc["session"]) >= {"title", "cwd", "created", "updated", "messages", "model"}
    roles = [m["role"] for m in doc["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    call = doc["messages"][1]["tool_calls"][0]
    assert call["name"] == "read" and call["input"] == {"path": "notes.txt"}
    assert doc["messages"][2]["tool_call_id"] == call["id"]
    assert "the token is" in doc["messages"][2]["text"]
    assert all(m["time"] for m in doc["messages"])
    assert [m["n"] for m in doc["messages"]] == [1, 2, 3, 4]

    md = avatar(env, project, "session", "export", sid, "--format", "md").stdout
    assert "## 1. You" in md and "## 3. Tool result" in md
    assert "**Tool call** `read`" in md and '"path": "notes.txt"' in md
    assert "```python\ndef greet():" in md

    page = project / "out.html"
    html = avatar(env, project, "session", "export", sid, "--format", "html", "-o", str(page))
    assert html.returncode == 0 and html.stdout == ""
    assert f"exported native session {sid} to {page}" in html.stderr
    text = page.read_text()
    dom = Dom()
    dom.feed(text)
    tags = [t for t, _ in dom.tags]
    assert "script" not in tags and "link" not in tags and "img" not in tags
    assert "style" in tags
    assert not [a for _, attrs in dom.tags for a in attrs.values() if a and "://" in a]
    call_box = next(d for d in dom.details if "→ read" in d)
    assert '"path"' in call_box and "the token is" in call_box  # arguments and result
    # The python block is highlighted: `def` sits in a keyword span.
    assert ("span", {"class": "k"}) in dom.tags and "def greet" in dom.text.replace("\n", " ")
    assert [a.get("id") for t, a in dom.tags if t == "section"] == ["m1", "m2", "m3", "m4"]

    for exported in (out.stdout, md, text):
        assert OPENAI_KEY not in exported and SERVICE_TOKEN not in exported
        assert "[redacted]" in exported


def test_html_export_renders_in_headless_chromium(
    env: dict[str, str], project: Path, model_server: FakeModelServer, tmp_path: Path
) -> None:
    browser = find_browser()
    if browser is None:  # .ci/run installs one; a checkout without it checks the page parsed
        pytest.skip("no Chromium installed (apt-get install chromium)")
    model_server.script("chat", Reply.tool_call("read", {"path": "notes.txt"}), CODE_ANSWER)
    sid = session_id(avatar(env, project, "-p", "native", "chat", "read notes.txt").stderr)
    page = tmp_path / "page.html"
    made = avatar(env, project, "session", "export", sid, "--format", "html", "-o", str(page))
    assert made.returncode == 0, made.stderr
    flags = [*headless_flags(tmp_path / "profile"), "--window-size=1000,900"]
    url = page.as_uri()
    dumped = subprocess.run(
        [browser, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=60
    )
    assert dumped.returncode == 0, dumped.stderr
    dom = Dom()
    dom.feed(dumped.stdout)
    assert [a.get("id") for t, a in dom.tags if t == "section"] == ["m1", "m2", "m3", "m4"]
    assert any("→ read" in d for d in dom.details) and ("span", {"class": "k"}) in dom.tags
    assert SERVICE_TOKEN not in dumped.stdout
    shot = tmp_path / "page.png"
    subprocess.run([browser, *flags, f"--screenshot={shot}", url], capture_output=True, timeout=60)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_export_usage_errors(env: dict[str, str], project: Path) -> None:
    made = avatar(env, project, "-p", "native", "chat", "hi")
    sid = session_id(made.stderr)
    bad = avatar(env, project, "session", "export", sid, "--format", "pdf")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    both = avatar(env, project, "session", "export", sid, "--archive", "a.tgz", "-o", "x")
    assert both.returncode == 2 and both.stderr.startswith("avatar: --archive")
    missing = avatar(env, project, "session", "export", "nosuchsession")
    assert missing.returncode == 2 and missing.stderr.startswith("avatar: ")


def test_fork_at_keeps_the_first_messages(
    env: dict[str, str], project: Path, model_server: FakeModelServer
) -> None:
    model_server.script("chat", "first answer", "second answer", "third answer")
    sid = session_id(avatar(env, project, "-p", "native", "chat", "first question").stderr)
    again = avatar(env, project, "chat", "--resume", sid, "second question")
    assert again.returncode == 0, again.stderr
    parent = next((Path(env["AVATAR_HOME"]) / "sessions").glob(f"*/{sid}.jsonl"))
    before = parent.read_bytes()

    shown = avatar(env, project, "session", "show", sid).stdout
    assert "── 2. assistant\nfirst answer" in shown and "── 4. assistant" in shown

    fork = avatar(env, project, "session", "fork", sid, "--at", "2")
    assert fork.returncode == 0, fork.stderr
    fork_id = fork.stdout.strip()
    assert fork_id != sid and f"session: {fork_id} (native, forked)" in fork.stderr
    assert parent.read_bytes() == before

    listed = json.loads(avatar(env, project, "session", "list", "--json").stdout)
    rows = {r["id"]: r for r in listed}
    assert rows[fork_id]["messages"] == 2 and rows[fork_id].get("parent") == f"native/{sid}"

    resumed = avatar(env, project, "chat", "--resume", fork_id, "another question")
    assert resumed.returncode == 0, resumed.stderr
    sent = model_server.requests_for("chat")[-1].conversation_texts()
    assert sent == ["first question", "first answer", "another question"]
    assert parent.read_bytes() == before

    past = avatar(env, project, "session", "fork", sid, "--at", "9")
    assert past.returncode == 2 and "has 4 messages" in past.stderr
    assert past.stderr.count("\n") == 1
    zero = avatar(env, project, "session", "fork", sid, "--at", "0")
    assert zero.returncode == 2

"""`avatar mcp` as an MCP client sees it (docs/design.md §12): the handshake, the tools and
their schemas, and each library tool over a project with sessions of claude, codex, gemini
and native; secrets masked in everything it returns; bad input answered, never fatal.

The real agents calling it: tests/integration/test_mcp_face.py.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.library.helpers import Library, make_library
from tests.support.mcp_client import McpClient

KEY = "sk-proj-" + "Zq8v" * 12  # an OpenAI key's shape, and the value of OPENAI_API_KEY
LIBRARY_TOOLS = {"search_sessions", "list_sessions", "show_session", "handoff"}


@pytest.fixture
def lib(tmp_path: Path) -> Library:
    return make_library(tmp_path, n=1, secrets={"OPENAI_API_KEY": KEY})


def env_of(lib: Library) -> dict[str, str]:
    return {
        **lib.synth.env,
        **lib.secrets,
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "AVATAR_HOME": str(lib.avatar_home),
        "AVATAR_CONFIG": str(lib.root / "no-config.yaml"),
    }


@pytest.fixture
def client(lib: Library) -> Iterator[McpClient]:
    with McpClient(["avatar", "mcp"], env=env_of(lib), cwd=lib.cwd) as running:
        running.initialize()
        yield running


def data(client: McpClient, tool: str, **arguments: object) -> dict[str, object]:
    text, failed = client.call(tool, arguments)
    assert not failed, text
    found: dict[str, object] = json.loads(text)
    return found


def ids(found: dict[str, object]) -> list[str]:
    sessions = found["sessions"]
    assert isinstance(sessions, list)
    return [s["id"] for s in sessions]


def test_the_handshake_negotiates_the_version_and_lists_the_tools(lib: Library) -> None:
    with McpClient(["avatar", "mcp"], env=env_of(lib), cwd=lib.cwd) as client:
        assert client.initialize("2025-03-26")["protocolVersion"] == "2025-03-26"
        assert client.request("ping")["result"] == {}
        tools = client.request("tools/list")["result"]["tools"]
        assert {t["name"] for t in tools} == LIBRARY_TOOLS
        for tool in tools:
            schema = tool["inputSchema"]
            assert schema["type"] == "object" and schema["additionalProperties"] is False
            assert tool["annotations"]["readOnlyHint"] is True
    with McpClient(["avatar", "mcp"], env=env_of(lib), cwd=lib.cwd) as client:
        result = client.initialize("1999-01-01")  # not one it speaks: its newest instead
        assert result["protocolVersion"] == "2025-11-25"
        assert result["serverInfo"]["name"] == "avatar"
    argv = ["avatar", "mcp", "--allow-prompt"]
    with McpClient(argv, env=env_of(lib), cwd=lib.cwd) as client:
        client.initialize()
        tools = client.request("tools/list")["result"]["tools"]
        assert {t["name"] for t in tools} == LIBRARY_TOOLS | {"open_session", "prompt"}
        assert {t["name"] for t in tools if not t["annotations"]["readOnlyHint"]} == {
            "open_session",
            "prompt",
        }


def test_search_takes_the_query_syntax_of_session_search(lib: Library, client: McpClient) -> None:
    phrase = lib.claude_session("run the migration with --dry-run first, then parse_args()")
    other = lib.claude_session("the dry run of the migration went first")
    native = lib.native_session("the walrus migration")
    assert set(ids(data(client, "search_sessions", query="migration"))) >= {phrase, other, native}
    assert ids(data(client, "search_sessions", query='"with --dry-run first"')) == [phrase]
    assert ids(data(client, "search_sessions", query="--dry-run")) == [phrase]
    assert ids(data(client, "search_sessions", query="parse_args()")) == [phrase]
    assert ids(data(client, "search_sessions", query="migration", provider="native")) == [native]
    assert ids(data(client, "search_sessions", query="migration", since="1h")) != []
    first = data(client, "search_sessions", query="migration", limit=2)
    rest = data(client, "search_sessions", query="migration", limit=2, offset=2)
    assert first["next_offset"] == 2 and len(ids(first)) == 2
    assert set(ids(first)) | set(ids(rest)) >= {phrase, other, native}
    hit = data(client, "search_sessions", query='"with --dry-run first"')["sessions"]
    assert isinstance(hit, list) and "--dry-run first" in hit[0]["snippet"]


def test_list_pages_every_providers_sessions(lib: Library, client: McpClient) -> None:
    every = data(client, "list_sessions", limit=500)
    listed = every["sessions"]
    assert isinstance(listed, list) and every["total"] == len(listed)
    assert {s["provider"] for s in listed} >= {"claude", "codex", "gemini"}
    first = data(client, "list_sessions", limit=2)
    second = data(client, "list_sessions", limit=2, offset=2)
    assert ids(first) + ids(second) == ids(every)[:4]
    assert first["next_offset"] == 2
    assert ids(data(client, "list_sessions", provider="codex")) == [
        s["id"] for s in listed if s["provider"] == "codex"
    ]


def test_show_pages_a_transcript(lib: Library, client: McpClient) -> None:
    sid = lib.claude_session("look at the files", tool_output="x" * 5_000)
    text, failed = client.call("show_session", {"session": sid[:8], "max_messages": 2})
    assert not failed, text
    assert text.startswith(f"claude session {sid} — look at the files\nmessages 1-2 of 4\n")
    assert "── 1. you\nlook at the files" in text and "── 3." not in text
    assert text.endswith("(more: from_message=3)")
    text, _ = client.call("show_session", {"session": sid, "from_message": 3, "max_chars": 1_000})
    assert "── 3. tool" in text and "characters cut" in text and len(text) < 1_500
    assert text.endswith("(more: from_message=4)")
    text, _ = client.call("show_session", {"session": sid, "from_message": 4})
    assert text.endswith("── 4. assistant\nDone.\n")
    text, failed = client.call("show_session", {"session": sid, "from_message": 9})
    assert not failed and text.endswith(
        "the session has 4 messages: from_message 9 is past its end"
    )


def test_a_handoff_fits_its_budget(lib: Library, client: McpClient) -> None:
    sid = lib.claude_session("port the billing module", tool_output="ledger line\n" * 3_000)
    text, failed = client.call("handoff", {"session": sid, "budget_tokens": 1_000})
    assert not failed, text
    assert f"claude session {sid}" in text and "## Goal\nport the billing module" in text
    assert len(text) <= 4_000
    # A goal alone over the budget: the summary is cut to fit all the same.
    said = "port the billing module; " + "keep every ledger entry twice. " * 600
    sid = lib.claude_session(said)
    text, failed = client.call("handoff", {"session": sid, "budget_tokens": 1_000})
    assert not failed and "## Goal\nport the billing module;" in text
    assert "cut to fit 1,000 tokens" in text and len(text) <= 4_000
    whole, _ = client.call("handoff", {"session": sid, "budget_tokens": 20_000})
    assert "cut to fit" not in whole and len(whole) > 4_000


def test_no_tool_returns_a_secret(lib: Library, client: McpClient) -> None:
    github = "ghp_" + "a1B2c3D4" * 5  # a secret by its shape alone
    sid = lib.claude_session(f"deploy with {KEY} and {github}", tool_output=f"token={github}")
    for tool, arguments in (
        ("search_sessions", {"query": "deploy"}),
        ("list_sessions", {}),
        ("show_session", {"session": sid}),
        ("handoff", {"session": sid}),
    ):
        text, failed = client.call(tool, arguments)
        assert not failed and sid in text, (tool, text)
        assert KEY not in text and github not in text, (tool, text)
        assert "a1B2c3D4" not in text, (tool, text)


def test_bad_calls_are_answered_and_the_server_goes_on(lib: Library, client: McpClient) -> None:
    text, failed = client.call("show_session", {"session": "no-such-session"})
    assert failed and text == "no session matches 'no-such-session'"
    text, failed = client.call("search_sessions", {"query": "x", "since": "soon"})
    assert failed and text.startswith("since: not an age: 'soon'")
    text, failed = client.call("search_sessions", {"query": "x", "provider": "nobody"})
    assert failed and "nobody" in text
    assert client.call("search_sessions", {}) == ("missing argument: query", True)
    assert client.call("handoff", {"session": "x", "budget_tokens": 10}) == (
        "budget_tokens must be at least 1000",
        True,
    )
    assert client.call("list_sessions", {"limit": "5"}) == (
        'limit must be an integer, not "5"',
        True,
    )
    assert client.call("list_sessions", {"all": True})[1]
    unknown = client.request("tools/call", {"name": "rm_rf", "arguments": {}})
    assert unknown["error"]["code"] == -32602
    assert client.request("resources/list")["error"]["code"] == -32601
    client.send(b"{not json")
    assert client.read()["error"]["code"] == -32700
    client.send(
        [{"jsonrpc": "2.0", "id": "a", "method": "ping"}, {"jsonrpc": "2.0", "method": "x"}]
    )
    assert client.read() == [{"jsonrpc": "2.0", "id": "a", "result": {}}]
    assert client.request("ping")["result"] == {}
    assert client.close() == 0
    assert client.stderr() == ""

"""No secret reaches any output (issue 20, acceptance 5), shape by shape, output by output.

One project, two providers: the native agent and the real Claude Code, both against the fake
model server. On each, one session holds every secret shape of `tests.support.secret_shapes`
three times over: in what the user typed, in a tool's output (the model reads a file holding
them) and in the model's answer. Then one session per shape opens with that shape, so its
title would start with the secret. Handoffs go both ways (claude → native, native → claude).

Each output is then read as a person or a script would get it, and must hold not one piece of
any secret while it does hold the shape's label (so the text really reached that output):
`session export` as md, html and json, the archive's files, `session show`, `session info
--json`, the `session list` table and its `--json`, `session search --json` for the shape's
label, the search index's file bytes, the listing caches (and the native index), avatar's
records, and the handoff text the next provider's model was sent.

What is not an output here: the agents' own session files (Claude Code's store, the native
store's messages) keep the conversation as it was, as the agent's memory of it; every output
made from them is masked. The live `chat` stream shows the user's own conversation as it is.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.drive import Avatar
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.secret_shapes import ALL_TEXT, ENV_NAME, ENV_VALUE, SHAPES, Shape, leaks

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

PROVIDERS = ("native", "claude")


@dataclass
class World:
    """The project, its sessions, and each output once read."""

    home: AgentHome
    server: FakeModelServer
    run: Avatar
    full: dict[str, str] = field(default_factory=dict)  # provider → the session of every shape
    #: (provider, shape id) → the session that shape opened (and titled)
    first: dict[tuple[str, str], str] = field(default_factory=dict)
    handoffs: list[str] = field(default_factory=list)  # what the next providers' models got
    read: dict[str, str] = field(default_factory=dict)

    @property
    def avatar_home(self) -> Path:
        return Path(self.run.env["AVATAR_HOME"])

    def files(self, *patterns: str) -> str:
        """The text of every file under `$AVATAR_HOME` matching one of `patterns`."""
        paths = sorted({p for pat in patterns for p in self.avatar_home.glob(pat) if p.is_file()})
        assert paths, patterns
        return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in paths)


def _chat(world: World, provider: str, *args: str) -> str:
    sid, got, _ = world.run.session(
        world.run("-p", provider, "chat", "--permission", "allow", *args)
    )
    assert got == provider
    return sid


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    require_bridges("claude")
    root = tmp_path_factory.mktemp("secret-outputs")
    with FakeModelServer() as server:
        home = AgentHome(root, server)
        env = avatar_env(home, **{ENV_NAME: ENV_VALUE})
        world = World(home, server, Avatar(home, env))
        (home.workdir / "notes.txt").write_text(ALL_TEXT)
        # The user's text, a tool's output and the answer: every shape, three times.
        server.chat.append(Reply.tool_call("read", {"path": "notes.txt"}), Reply.text(ALL_TEXT))
        world.full["native"] = _chat(world, "native", ALL_TEXT)
        bash = {"command": "cat notes.txt", "description": "read the notes"}
        server.anthropic.append(Reply.tool_call("Bash", bash), Reply.text(ALL_TEXT))
        world.full["claude"] = _chat(world, "claude", ALL_TEXT)
        # A session per shape whose title starts with it (the model answers its default).
        with ThreadPoolExecutor(2) as pool:
            starts = [(p, s) for p in PROVIDERS for s in SHAPES]
            opened = pool.map(lambda a: _chat(world, a[0], a[1].line), starts)
            world.first = {(p, s.id): sid for (p, s), sid in zip(starts, opened, strict=True)}
        for target, source in (("native", "claude"), ("claude", "native")):
            before = len(server.requests)
            _chat(world, target, "--from", world.full[source], "carry on")
            world.handoffs += [r.all_text() for r in server.requests[before:] if r.is_main]
        yield world


def _each_full(command: Callable[[World, str], str]) -> Callable[[World], str]:
    """An output read from each provider's session of every shape, one after the other."""
    return lambda w: "\n".join(command(w, w.full[p]) for p in PROVIDERS)


def _export(fmt: str) -> Callable[[World], str]:
    return _each_full(lambda w, sid: w.run("session", "export", sid, "--format", fmt).stdout)


def _archive(world: World, sid: str) -> str:
    target = world.home.root / f"{sid}.tar.gz"
    world.run("session", "export", sid, "--archive", str(target))
    with tarfile.open(target) as tar:
        members = [tar.extractfile(m) for m in tar.getmembers() if m.isfile()]
        return "\n".join(f.read().decode("utf-8", "replace") for f in members if f)


def _search_index(world: World) -> str:
    world.run("session", "search", SHAPES[0].label)  # brings the index up to date
    return world.files("cache/search.sqlite*")


OUTPUTS: dict[str, Callable[[World], str]] = {
    "export md": _export("md"),
    "export html": _export("html"),
    "export json": _export("json"),
    "archive": _each_full(_archive),
    "session show": _each_full(lambda w, sid: w.run("session", "show", sid).stdout),
    "session list": lambda w: w.run("session", "list", "--limit", "0").stdout,
    "session list --json": lambda w: w.run("session", "list", "--limit", "0", "--json").stdout,
    "search index file": _search_index,
    "listing caches": lambda w: w.files("cache/*.json", "sessions/*/.index.jsonl"),
    "records": lambda w: w.files("records/**/*"),
    "handoff sent to the next model": lambda w: "\n".join(w.handoffs),
}


#: Outputs read for each shape: its search, and the facts of the sessions it opened (titled).
PER_SHAPE: dict[str, Callable[[World, Shape], str]] = {
    "session search --json": lambda w, s: w.run("session", "search", s.label, "--json").stdout,
    "session info --json": lambda w, s: "\n".join(
        w.run("session", "info", w.first[p, s.id], "--json").stdout for p in PROVIDERS
    ),
}


def _read(world: World, output: str, shape: Shape) -> str:
    if output in PER_SHAPE:
        return PER_SHAPE[output](world, shape)
    if output not in world.read:
        world.read[output] = OUTPUTS[output](world)
    return world.read[output]


@pytest.mark.parametrize("output", [*OUTPUTS, *PER_SHAPE])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.id)
def test_no_output_holds_a_secret(world: World, shape: Shape, output: str) -> None:
    text = _read(world, output, shape)
    assert shape.label in text, f"{output} never got the text around the {shape.id} secret"
    assert shape.id not in leaks(text), f"{output} shows the {shape.id} secret"


def test_the_search_snippets_are_there_and_masked(world: World) -> None:
    """The search output is not empty for want of hits: each label finds its sessions, and
    the snippet shows the mask where the secret was."""
    for shape in SHAPES[:3]:
        hits = json.loads(world.run("session", "search", shape.label, "--json").stdout)
        assert {h["provider"] for h in hits} == set(PROVIDERS)
        assert any("[redacted]" in h["snippet"] for h in hits)

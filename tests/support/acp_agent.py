"""A fake ACP agent on the SDK's agent side, with every behaviour switchable per test.

Run it as a subprocess::

    python -m tests.support.acp_agent --caps load,list,resume --config '{"page_size": 2}'

or give the JSON config in ``FAKE_ACP_CONFIG``. Sessions persist as JSON files under
``state_dir`` (config, else ``$FAKE_ACP_STATE``, else ``./.fake-acp``; ``~`` is the agent's
``$HOME``), made at start (``lazy_state``: at the first session request, and a failure to make
it is answered, as Node agents do, "Internal error: Cannot call write after a stream was
destroyed", the OS's words only in the traceback on stderr), so a restarted agent
can list, load and resume them; every request is appended to ``<state_dir>/requests.jsonl``
(method and params) for tests to inspect. A running agent can be reconfigured through the
extension method ``_fake/configure`` (params: config keys to change).

Each prompt is answered ``reply <n> to '<prompt>' (history <m>)`` in a few chunks, where
``m`` counts the messages the session held before the prompt — proof that a reopened session
carries its earlier turns (``quote_first_line``: only the prompt's first line is quoted, the
user's own words of a seeded prompt, not the context handed over after them). Behaviours (all
off by default):

- capabilities: ``load`` ``list`` ``resume`` ``fork`` ``delete`` ``additional_dirs``
  ``mcp_http`` ``mcp_sse``; ``page_size`` paginates ``session/list``;
- failures: ``new_error`` / ``load_error`` / ``resume_error`` / ``list_error`` /
  ``fork_error`` (a JSON-RPC code to answer with; ``error_details`` puts a reason in the
  error's ``data.details``, as codex-acp and Gemini CLI do), ``resume_invalid`` (answer null, a
  client ValidationError), ``damage_on_load`` (truncate that file, then fail the load like
  Gemini's same-minute bug);
- ``fork_needs_open``: ``session/fork`` answers "Session not found" for a session this agent
  process has not opened (new, loaded or resumed), as some agents keep forkable sessions only
  in memory;
- replay: ``fork_replay`` (a fork replays its history, as opencode's does), ``late_replay``
  (seconds after the load response before the second half of the history is sent),
  ``replay_gap`` (pause between late replay messages);
- ``banner``: text the agent says as an ``agent_message_chunk`` of a session it has just
  opened (new or loaded), unasked, once the open is answered (``banner_delay`` seconds later),
  as a start-up banner;
- ``auth_method``: refuse ``session/new`` until ``authenticate`` with that method id;
- ``crash_on_new``: exit during ``session/new``; ``new_delay``: seconds it takes to answer
  ``session/new`` (a slow agent);
- in a prompt: ``crash`` (send a chunk, print to stderr, exit 3), ``raise_on`` (a prompt
  holding this text: send a chunk, then raise, so the SDK answers the prompt with an internal
  error while the agent lives on), ``stderr_flood`` (bytes
  written to stderr first), ``permission`` (ask, report the option chosen), ``edit`` (an
  agent that edits files itself, as codex does: announce a tool call ``{"kind", "path",
  "text", "announce"}`` — with ``announce`` its facts come in a ``tool_call`` update and the
  permission request repeats only the id, else the request carries the kind, the location and
  a diff — ask permission, and write ``text`` to ``path`` directly when an allow option was
  chosen; ``command`` instead of ``path`` asks for an execute call; ``title`` and
  ``raw_input`` replace what the request says, ``write_to`` is the file written instead),
  ``fs_read`` / ``fs_write`` (paths; ``fs_read_as``: the session the read names, not the
  prompt's), ``race`` (reads and writes while names are swapped for
  symlinks: tests/support/acp_race.py), ``terminal`` (a shell command), ``rich`` (thought,
  tool call, plan, usage, title, commands, mode updates), ``chunk_delay`` (seconds between
  chunks; the turn honours ``session/cancel`` unless ``ignore_cancel``), ``after_reply``
  (updates sent after the prompt response: a title, ``after_delay`` seconds later);
- ``models``: offer a ``model`` config option with these values (``set_config_option``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
import traceback
import uuid
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import acp
from acp import RequestError
from acp.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AuthMethodAgent,
    AvailableCommand,
    AvailableCommandsUpdate,
    Cost,
    CurrentModeUpdate,
    FileEditToolCallContent,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PlanEntry,
    PromptResponse,
    ResumeSessionResponse,
    SessionAdditionalDirectoriesCapabilities,
    SessionCapabilities,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionDeleteCapabilities,
    SessionForkCapabilities,
    SessionInfo,
    SessionInfoUpdate,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    Usage,
    UsageUpdate,
    UserMessageChunk,
)

CAPS = ("load", "list", "resume", "fork", "delete", "additional_dirs", "mcp_http", "mcp_sse")


@dataclass
class FakeConfig:
    """Everything a test can switch (see the module docstring)."""

    load: bool = False
    list: bool = False
    resume: bool = False
    fork: bool = False
    delete: bool = False
    additional_dirs: bool = False
    mcp_http: bool = False
    mcp_sse: bool = False
    page_size: int = 0
    state_dir: str | None = None
    lazy_state: bool = False
    new_error: int | None = None
    new_delay: float = 0.0
    load_error: int | None = None
    resume_error: int | None = None
    list_error: int | None = None
    fork_error: int | None = None
    fork_replay: bool = False
    fork_needs_open: bool = False
    error_details: str | None = None
    resume_invalid: bool = False
    damage_on_load: str | None = None
    late_replay: float = 0.0
    replay_gap: float = 0.0
    auth_method: str | None = None
    crash: bool = False
    raise_on: str | None = None
    crash_on_new: bool = False
    stderr_flood: int = 0
    permission: bool = False
    edit: dict[str, Any] | None = None
    fs_read: str | None = None
    fs_read_as: str | None = None
    fs_write: str | None = None
    race: dict[str, Any] | None = None
    terminal: str | None = None
    rich: bool = False
    chunk_delay: float = 0.0
    chunks: int = 3
    ignore_cancel: bool = False
    after_reply: bool = False
    quote_first_line: bool = False
    banner: str | None = None
    banner_delay: float = 0.0
    after_delay: float = 0.05
    models: list[str] | None = None

    def update(self, data: dict[str, Any]) -> None:
        """Apply known keys from `data`."""
        known = {f.name for f in fields(self)}
        for key, value in data.items():
            if key not in known:
                raise ValueError(f"unknown fake agent option {key!r}")
            setattr(self, key, value)


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _text(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


class Store:
    """Sessions as JSON files, plus a log of every request."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "sessions").mkdir(parents=True, exist_ok=True)

    def path(self, session_id: str) -> Path:
        return self.root / "sessions" / f"{session_id}.json"

    def get(self, session_id: str) -> dict[str, Any] | None:
        p = self.path(session_id)
        return json.loads(p.read_text()) if p.exists() else None

    def put(self, session: dict[str, Any]) -> None:
        session["updated_at"] = _now()
        # Whole or not at all (renamed into place): the stress test kills agents at any
        # moment and then reads what they hold; a kill mid-write left an empty file.
        path = self.path(session["id"])
        fresh = path.with_name(f".{path.name}.{os.getpid()}.new")
        fresh.write_text(json.dumps(session))
        os.replace(fresh, path)

    def all(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text()) for p in sorted((self.root / "sessions").glob("*.json"))]

    def log(self, method: str, params: dict[str, Any]) -> None:
        with (self.root / "requests.jsonl").open("a") as f:
            f.write(json.dumps({"method": method, "params": params}, default=str) + "\n")


def _replay(session: dict[str, Any]) -> list[Any]:
    """A session's history as the updates that replay it."""
    return [
        UserMessageChunk(session_update="user_message_chunk", content=_text(m["text"]))
        if m["role"] == "user"
        else AgentMessageChunk(session_update="agent_message_chunk", content=_text(m["text"]))
        for m in session["history"]
    ]


def _dump(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, list):
        return [_dump(v) for v in value]
    return value


class FakeAgent:
    """The agent side; see the module docstring for the behaviours."""

    def __init__(self, config: FakeConfig) -> None:
        self.config = config
        root = config.state_dir or os.environ.get("FAKE_ACP_STATE") or ".fake-acp"
        self.root = Path(os.path.expanduser(root))
        self._store = None if config.lazy_state else Store(self.root)
        self._unlogged: list[tuple[str, dict[str, Any]]] = []  # (before a lazy store exists)
        self.conn: Any = None
        self.authenticated = False
        self.cancelled: dict[str, asyncio.Event] = {}
        self.opened: set[str] = set()  # the sessions this process has open
        self._tasks: set[asyncio.Task[Any]] = set()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    @property
    def store(self) -> Store:
        """The sessions' store, made on first use when `lazy_state` (see the module docstring)."""
        if self._store is None:
            try:
                self._store = Store(self.root)
            except OSError:
                traceback.print_exc()
                sys.stderr.flush()
                raise RequestError(
                    -32603,
                    "Internal error",
                    {"details": "Cannot call write after a stream was destroyed"},
                ) from None
            for method, params in self._unlogged:
                self._store.log(method, params)
        return self._store

    def _log(self, method: str, **params: Any) -> None:
        entry = {k: _dump(v) for k, v in params.items()}
        if self._store is None and method == "initialize":
            self._unlogged.append((method, entry))
            return
        self.store.log(method, entry)

    async def _update(self, session_id: str, update: Any) -> None:
        await self.conn.session_update(session_id=session_id, update=update)

    # -- lifecycle --------------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self._log("initialize", client_capabilities=client_capabilities, client_info=client_info)
        c = self.config
        caps = AgentCapabilities(
            load_session=c.load,
            mcp_capabilities=McpCapabilities(http=c.mcp_http, sse=c.mcp_sse),
            session_capabilities=SessionCapabilities(
                list=SessionListCapabilities() if c.list else None,
                resume=SessionResumeCapabilities() if c.resume else None,
                fork=SessionForkCapabilities() if c.fork else None,
                delete=SessionDeleteCapabilities() if c.delete else None,
                additional_directories=(
                    SessionAdditionalDirectoriesCapabilities() if c.additional_dirs else None
                ),
            ),
        )
        methods = [AuthMethodAgent(id=c.auth_method, name="Fake login")] if c.auth_method else []
        return InitializeResponse(
            protocol_version=protocol_version,
            agent_capabilities=caps,
            auth_methods=methods,
            agent_info=Implementation(name="fake-acp", version="1.0"),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        self._log("authenticate", method_id=method_id)
        if method_id != self.config.auth_method:
            raise RequestError(-32602, f"unknown auth method {method_id}")
        self.authenticated = True

    def _check_auth(self) -> None:
        if self.config.auth_method and not self.authenticated:
            raise RequestError.auth_required({"details": "log in first"})

    # -- sessions ---------------------------------------------------------------------------

    async def new_session(
        self, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        self._log(
            "session/new",
            cwd=cwd,
            additional_directories=additional_directories,
            mcp_servers=mcp_servers or [],
        )
        self._check_auth()
        if self.config.new_delay:
            await asyncio.sleep(self.config.new_delay)
        if self.config.new_error is not None:
            raise self._refusal(self.config.new_error, "new session")
        if self.config.crash_on_new:
            sys.stderr.write("fake agent: cannot create sessions today\n")
            sys.stderr.flush()
            os._exit(4)
        session = {"id": str(uuid.uuid4()), "cwd": cwd, "title": None, "history": []}
        self.store.put(session)
        self.opened.add(session["id"])
        self._banner(session["id"])
        return NewSessionResponse(session_id=session["id"], config_options=self._options())

    def _options(self, current: str | None = None) -> list[Any] | None:
        models = self.config.models
        if not models:
            return None
        return [
            SessionConfigOptionSelect(
                id="model",
                name="Model",
                category="model",
                type="select",
                current_value=current or models[0],
                options=[SessionConfigSelectOption(value=m, name=m) for m in models],
            )
        ]

    def _refusal(self, code: int, what: str) -> RequestError:
        details = self.config.error_details
        return RequestError(
            code, f"{what} refused by the fake agent", {"details": details} if details else None
        )

    def _session(self, session_id: str) -> dict[str, Any]:
        session = self.store.get(session_id)
        if session is None:
            raise RequestError.resource_not_found(session_id)
        return session

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: Any = None,
        additional_directories: Any = None,
        **kwargs: Any,
    ) -> Any:
        self._log("session/load", cwd=cwd, session_id=session_id, mcp_servers=mcp_servers or [])
        c = self.config
        self._check_auth()
        if c.damage_on_load:
            Path(c.damage_on_load).write_text("")
            raise RequestError(-32603, "No previous sessions found for this project.")
        if c.load_error is not None:
            raise self._refusal(c.load_error, "load")
        session = self._session(session_id)
        self.opened.add(session_id)
        updates = _replay(session)
        split = len(updates) // 2 if c.late_replay else len(updates)
        for update in updates[:split]:
            await self._update(session_id, update)
        if c.late_replay:
            task = asyncio.get_running_loop().create_task(
                self._late(session_id, updates[split:], c.late_replay, c.replay_gap)
            )
            self._tasks.add(task)
        self._banner(session_id)
        return LoadSessionResponse()

    def _banner(self, session_id: str) -> None:
        """Say the configured banner in session `session_id`, after the open is answered."""
        if self.config.banner is None:
            return
        chunk = AgentMessageChunk(
            session_update="agent_message_chunk", content=_text(self.config.banner)
        )
        task = asyncio.get_running_loop().create_task(
            self._late(session_id, [chunk], self.config.banner_delay, 0.0)
        )
        self._tasks.add(task)

    async def _late(self, session_id: str, updates: list[Any], delay: float, gap: float) -> None:
        await asyncio.sleep(delay)
        for update in updates:
            await self._update(session_id, update)
            if gap:
                await asyncio.sleep(gap)

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: Any = None,
        mcp_servers: Any = None,
        **kwargs: Any,
    ) -> Any:
        self._log("session/resume", cwd=cwd, session_id=session_id, mcp_servers=mcp_servers or [])
        self._check_auth()
        if self.config.resume_error is not None:
            raise self._refusal(self.config.resume_error, "resume")
        if self.config.resume_invalid:
            return None
        self._session(session_id)
        self.opened.add(session_id)
        return ResumeSessionResponse()

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: Any = None,
        mcp_servers: Any = None,
        **kwargs: Any,
    ) -> ForkSessionResponse:
        self._log("session/fork", cwd=cwd, session_id=session_id)
        if self.config.fork_error is not None:
            raise self._refusal(self.config.fork_error, "fork")
        if self.config.fork_needs_open and session_id not in self.opened:
            raise RequestError(-32603, "Session not found")
        parent = self._session(session_id)
        child = {**parent, "id": str(uuid.uuid4()), "parent": session_id}
        self.store.put(child)
        self.opened.add(child["id"])
        if self.config.fork_replay:  # as opencode does: the history, under the fork's id
            for update in _replay(child):
                await self._update(child["id"], update)
        return ForkSessionResponse(session_id=child["id"])

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        self._log("session/list", cwd=cwd, cursor=cursor)
        if self.config.list_error is not None:
            raise self._refusal(self.config.list_error, "list")
        # Deliberately not sorted by time: the client must find the newest itself.
        sessions = [s for s in self.store.all() if cwd is None or s["cwd"] == cwd]
        start = int(cursor or 0)
        size = self.config.page_size or len(sessions) or 1
        page = sessions[start : start + size]
        more = start + size < len(sessions)
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=s["id"],
                    cwd=s["cwd"],
                    title=s.get("title"),
                    updated_at=s.get("updated_at"),
                )
                for s in page
            ],
            next_cursor=str(start + size) if more else None,
        )

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self._log("session/cancel", session_id=session_id)
        self.cancelled.setdefault(session_id, asyncio.Event()).set()

    async def set_config_option(
        self, config_id: str, session_id: str, value: Any, **kwargs: Any
    ) -> Any:
        self._log("session/set_config_option", config_id=config_id, value=value)
        if not self.config.models or value not in self.config.models:
            raise RequestError.invalid_params({"details": f"unknown model {value}"})
        return SetSessionConfigOptionResponse(config_options=self._options(str(value)) or [])

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "fake/configure":
            self.config.update(params)
            return {"ok": True}
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    # -- prompt -----------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(b, "text", "") for b in prompt)
        self._log("session/prompt", session_id=session_id, text=text)
        c = self.config
        session = self._session(session_id)
        cancelled = self.cancelled.setdefault(session_id, asyncio.Event())
        cancelled.clear()
        notes: list[str] = []
        if c.crash:
            await self._update(
                session_id,
                AgentMessageChunk(session_update="agent_message_chunk", content=_text("partial ")),
            )
            sys.stderr.write("fake agent: about to crash\nfake agent: fatal: out of cheese\n")
            sys.stderr.flush()
            os._exit(3)
        if c.raise_on and c.raise_on in text:
            await self._update(
                session_id,
                AgentMessageChunk(session_update="agent_message_chunk", content=_text("partial ")),
            )
            raise RuntimeError("the fake agent tripped inside the turn")
        if c.stderr_flood:
            line = b"x" * 1023 + b"\n"
            for _ in range(c.stderr_flood // len(line)):
                sys.stderr.buffer.write(line)
            sys.stderr.buffer.write(b"fake agent: flood done\n")
            sys.stderr.flush()
        if c.permission:
            notes.append("permission: " + await self._ask(session_id))
        if c.edit:
            notes.append(await self._edit(session_id, c.edit))
        if c.fs_read:
            try:
                about = c.fs_read_as or session_id
                got = await self.conn.read_text_file(session_id=about, path=c.fs_read)
                notes.append(f"read ok: {got.content[:40]}")
            except RequestError as e:
                notes.append(f"read refused: {e}")
        if c.fs_write:
            try:
                await self.conn.write_text_file(
                    session_id=session_id, path=c.fs_write, content="written by the fake agent\n"
                )
                notes.append("write ok")
            except RequestError as e:
                notes.append(f"write refused: {e}")
        if c.race:
            from tests.support.acp_race import race

            notes.append(await race(self.conn, session_id, c.race))
        if c.terminal:
            notes.append(await self._terminal(session_id, c.terminal))
        if c.rich:
            await self._rich(session_id)
        history = len(session["history"])
        turn = history // 2 + 1
        quoted = text.split("\n", 1)[0] if c.quote_first_line else text
        reply = f"reply {turn} to '{quoted}' (history {history})"
        if notes:
            reply += " [" + "; ".join(notes) + "]"
        size = max(1, -(-len(reply) // max(c.chunks, 1)))
        sent = ""
        for i in range(0, len(reply), size):
            if cancelled.is_set() and not c.ignore_cancel:
                return PromptResponse(stop_reason="cancelled")
            piece = reply[i : i + size]
            await self._update(
                session_id,
                AgentMessageChunk(session_update="agent_message_chunk", content=_text(piece)),
            )
            sent += piece
            if c.chunk_delay:
                await asyncio.sleep(c.chunk_delay)
        if cancelled.is_set() and not c.ignore_cancel:
            return PromptResponse(stop_reason="cancelled")
        session["history"] += [{"role": "user", "text": text}, {"role": "assistant", "text": sent}]
        self.store.put(session)
        if c.after_reply:
            task = asyncio.get_running_loop().create_task(self._after(session_id))
            self._tasks.add(task)
        return PromptResponse(
            stop_reason="end_turn",
            usage=Usage(total_tokens=30, input_tokens=20, output_tokens=10, cached_read_tokens=5),
        )

    async def _after(self, session_id: str) -> None:
        await asyncio.sleep(self.config.after_delay)
        await self._update(
            session_id, SessionInfoUpdate(session_update="session_info_update", title="Late title")
        )

    async def _ask(self, session_id: str) -> str:
        options = [
            PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
            PermissionOption(option_id="always", name="Always allow", kind="allow_always"),
            PermissionOption(option_id="no", name="Reject", kind="reject_once"),
        ]
        call = ToolCallUpdate(
            tool_call_id="perm-1",
            title="Delete build/",
            kind="delete",
            locations=[ToolCallLocation(path="build")],
        )
        resp = await self.conn.request_permission(
            session_id=session_id, tool_call=call, options=options
        )
        outcome = resp.outcome
        return getattr(outcome, "option_id", None) or outcome.outcome

    async def _edit(self, session_id: str, edit: dict[str, Any]) -> str:
        """Ask to edit (or run) as `edit` says; apply the edit itself when allowed."""
        kind = edit.get("kind", "edit")
        path, text = edit.get("path"), edit.get("text", "edited by the fake agent\n")
        title = edit.get("title") or f"{kind} {path or edit.get('command')}"
        facts: dict[str, Any] = {"kind": kind, "title": title}
        if path is not None:
            facts["locations"] = [ToolCallLocation(path=path)]
            facts["content"] = [
                FileEditToolCallContent(type="diff", path=path, old_text=None, new_text=text)
            ]
        if edit.get("command") is not None:
            facts["raw_input"] = {"command": edit["command"]}
        if edit.get("raw_input") is not None:
            facts["raw_input"] = edit["raw_input"]
        path = edit.get("write_to", path)  # (what it writes when allowed, named or not)
        if edit.get("announce"):
            await self._update(
                session_id,
                ToolCallStart(
                    session_update="tool_call", tool_call_id="edit-1", status="pending", **facts
                ),
            )
            request = ToolCallUpdate(tool_call_id="edit-1", title=facts["title"])
        else:
            request = ToolCallUpdate(tool_call_id="edit-1", **facts)
        options = [
            PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
            PermissionOption(option_id="no", name="Reject", kind="reject_once"),
        ]
        resp = await self.conn.request_permission(
            session_id=session_id, tool_call=request, options=options
        )
        chosen = getattr(resp.outcome, "option_id", None) or resp.outcome.outcome
        if chosen == "yes" and path is not None:
            Path(path).write_text(text)
        return f"edit answer: {chosen}"

    async def _terminal(self, session_id: str, command: str) -> str:
        try:
            created = await self.conn.create_terminal(
                session_id=session_id,
                command="/bin/sh",
                args=["-c", command],
                output_byte_limit=1000,
            )
        except RequestError as e:
            return f"terminal refused: {e}"
        tid = created.terminal_id
        status = await self.conn.wait_for_terminal_exit(session_id=session_id, terminal_id=tid)
        out = await self.conn.terminal_output(session_id=session_id, terminal_id=tid)
        await self.conn.release_terminal(session_id=session_id, terminal_id=tid)
        return f"terminal exit {status.exit_code}: {out.output.strip()[:300]}"

    async def _rich(self, session_id: str) -> None:
        u = self._update
        await u(
            session_id,
            AgentThoughtChunk(session_update="agent_thought_chunk", content=_text("thinking hard")),
        )
        await u(
            session_id,
            ToolCallStart(
                session_update="tool_call",
                tool_call_id="t1",
                title="Read README",
                kind="read",
                status="pending",
                raw_input={"path": "README.md"},
            ),
        )
        await u(
            session_id,
            ToolCallProgress(
                session_update="tool_call_update", tool_call_id="t1", status="in_progress"
            ),
        )
        await u(
            session_id,
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id="t1",
                status="completed",
                content=[acp.tool_content(_text("file body"))],
            ),
        )
        await u(
            session_id,
            AgentPlanUpdate(
                session_update="plan",
                entries=[
                    PlanEntry(content="step one", priority="high", status="completed"),
                    PlanEntry(content="step two", priority="low", status="pending"),
                ],
            ),
        )
        await u(
            session_id,
            UsageUpdate(
                session_update="usage_update",
                used=1234,
                size=200000,
                cost=Cost(amount=0.25, currency="USD"),
            ),
        )
        await u(
            session_id, SessionInfoUpdate(session_update="session_info_update", title="Fake title")
        )
        await u(
            session_id,
            AvailableCommandsUpdate(
                session_update="available_commands_update",
                available_commands=[AvailableCommand(name="review", description="Review code")],
            ),
        )
        await u(
            session_id,
            CurrentModeUpdate(session_update="current_mode_update", current_mode_id="plan"),
        )


def seed_session(
    state_dir: Path | str,
    cwd: Path | str,
    turns: int = 1,
    updated_at: str | None = None,
    title: str | None = None,
) -> str:
    """Write a session with `turns` earlier exchanges straight into the state dir (no agent)."""
    store = Store(Path(state_dir))
    history: list[dict[str, str]] = []
    for n in range(1, turns + 1):
        history += [
            {"role": "user", "text": f"earlier question {n}"},
            {"role": "assistant", "text": f"earlier answer {n}"},
        ]
    session = {"id": str(uuid.uuid4()), "cwd": str(cwd), "title": title, "history": history}
    store.put(session)
    if updated_at is not None:
        session["updated_at"] = updated_at
        store.path(session["id"]).write_text(json.dumps(session))
    return session["id"]


def parse_config(argv: list[str] | None = None) -> FakeConfig:
    """Config from FAKE_ACP_CONFIG, then `--config JSON`, then `--caps a,b,c`."""
    parser = argparse.ArgumentParser(prog="python -m tests.support.acp_agent")
    parser.add_argument("--caps", default="", help="comma-separated: " + ",".join(CAPS))
    parser.add_argument("--config", default="", help="JSON object of options")
    args = parser.parse_args(argv)
    config = FakeConfig()
    if os.environ.get("FAKE_ACP_CONFIG"):
        config.update(json.loads(os.environ["FAKE_ACP_CONFIG"]))
    if args.config:
        config.update(json.loads(args.config))
    for cap in filter(None, (c.strip() for c in args.caps.split(","))):
        if cap not in CAPS:
            parser.error(f"unknown capability {cap!r}")
        setattr(config, cap, True)
    return config


def command(config: FakeConfig | dict[str, Any] | None = None, caps: str = "") -> list[str]:
    """The argv that runs this fake agent with `config` (for ProviderSpec.command)."""
    data = asdict(config) if isinstance(config, FakeConfig) else dict(config or {})
    argv = [sys.executable, "-m", "tests.support.acp_agent", "--config", json.dumps(data)]
    if caps:
        argv += ["--caps", caps]
    return argv


def program(path: Path, config: dict[str, Any] | None = None) -> Path:
    """Write at `path` an executable running this fake agent with `config` — an agent as a
    user installs one, a program of its own (its `state_dir` may start with `~`)."""
    repo = Path(__file__).resolve().parents[2]
    argv = [sys.executable, "-m", "tests.support.acp_agent", "--config", json.dumps(config or {})]
    path.write_text(f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(repo))} exec {shlex.join(argv)}\n")
    path.chmod(0o755)
    return path


def provider_entry(state_dir: Path, **options: Any) -> dict[str, Any]:
    """A `providers:` config entry running this fake agent as a `transport: acp` provider, its
    sessions under `state_dir`, with `options` (see the module docstring)."""
    return {
        "transport": "acp",
        "command": command({"state_dir": str(state_dir), **options}),
        "env": {"PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        "state_dirs": [f"{state_dir}/"],
    }


async def _main(config: FakeConfig) -> None:
    await acp.run_agent(FakeAgent(config), use_unstable_protocol=True)


def main(argv: list[str] | None = None) -> None:
    """Entry point."""
    asyncio.run(_main(parse_config(argv)))


if __name__ == "__main__":
    main()

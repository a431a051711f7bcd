"""`avatar acp`'s side of the Agent Client Protocol: the client's requests answered on the
JSON-RPC connection both of avatar's ACP sides speak (`avatar.core.jsonrpc`), over the lines
`stdio` reads.

- `initialize`: `stdio.hello` (answered early, before this module loads, when it came first);
- `session/new`: a session on the default provider (the config's, else the first usable,
  docs/design.md §3), in an engine of its own for the `cwd` asked (`face.Face`); its config
  options `provider` and `model` and its modes come back with it, and the commands follow;
- `session/load`: any provider's session, opened by the REPL's resume rules
  (`Engine.open(resume=…)`), its history replayed as updates before the answer;
- `session/list`: every provider's sessions of the project (`engine.library`), newest first,
  `PAGE` a page, the provider in each entry's title and `_meta`;
- `session/prompt`, `session/cancel`, `session/set_config_option`, `session/set_mode`,
  `session/close`: the face's.

An error is one JSON-RPC error whose message is avatar's one line (secrets masked); a session
id this process has not opened is -32002 (ACP's "resource not found").
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.cli.acp.face import Face
from avatar.cli.acp.options import providers
from avatar.cli.acp.slash import commands_update
from avatar.cli.acp.stdio import hello
from avatar.cli.acp.updates import message
from avatar.cli.state import AppState
from avatar.core.errors import AvatarError, SessionNotFoundError
from avatar.core.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, Connection, RpcError
from avatar.core.prompts import Image, Prompt

if TYPE_CHECKING:
    from avatar.cli.acp.stdio import Stdio
    from avatar.engine.engine import Engine

#: Sessions in one page of `session/list`.
PAGE = 50
#: ACP's "resource not found".
NOT_FOUND = -32002
#: The longest line read from the client (a prompt's images come base64 in one line).
MAX_LINE = 256 * 1024 * 1024


class _Out:
    """The connection's writer: `stdio`'s, which writes each line whole at once."""

    def __init__(self, stdio: Stdio) -> None:
        self.stdio = stdio

    def write(self, data: bytes) -> None:
        self.stdio.write(data)

    async def drain(self) -> None:
        return None


class AcpAgent:
    """avatar as an ACP agent: the sessions opened here, by ACP session id."""

    def __init__(self, state: AppState, permission: str | None = None) -> None:
        self.state = state
        self.permission = permission
        self.faces: dict[str, Face] = {}
        self._listing: dict[str, Engine] = {}  # an engine per project listed (no agent runs)
        self.conn: Connection | None = None

    async def serve(self, stdio: Stdio) -> None:
        """Answer the client until its input ends; then stop every agent started."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_LINE)

        def take(line: bytes | None) -> None:  # (in the reading thread)
            if line is None:
                loop.call_soon_threadsafe(reader.feed_eof)
            else:
                loop.call_soon_threadsafe(reader.feed_data, line)

        self.conn = Connection(reader, _Out(stdio), self.request, self.notification)
        stdio.attach(take)
        try:
            await self.conn.finished
        finally:
            await self.conn.close()
            for face in list(self.faces.values()):
                await face.close()

    # -- dispatch ---------------------------------------------------------------------------

    def notification(self, method: str, params: dict[str, Any]) -> None:
        """`session/cancel` interrupts that session's turn; others are ignored."""
        if method == "session/cancel":
            face = self.faces.get(str(params.get("sessionId")))
            if face is not None:
                face.later(face.cancel())

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """The answer to one request of the client."""
        if method == "initialize":
            return hello(params)
        if method == "authenticate":
            return {}
        if method == "session/new":
            return await self.new_session(params)
        if method == "session/load":
            return await self.load_session(params)
        if method == "session/list":
            return await self.list_sessions(params)
        if method == "session/prompt":
            return await self.face(params).prompt(prompt_of(params["prompt"]))
        if method == "session/set_config_option":
            face = self.face(params)
            chosen = await face.set_option(str(params["configId"]), params["value"])
            return {"configOptions": chosen}
        if method == "session/set_mode":
            self.face(params).set_mode(str(params["modeId"]))
            return {}
        if method == "session/close":
            face = self.face(params)
            del self.faces[face.id]
            await face.close()
            return {}
        raise RpcError(METHOD_NOT_FOUND, f"method not found: {method}")

    def face(self, params: dict[str, Any]) -> Face:
        """The session a request names."""
        sid = params["sessionId"]
        face = self.faces.get(sid) if isinstance(sid, str) else None
        if face is None:
            raise RpcError(NOT_FOUND, f"no session {sid} is open here: session/load it first")
        return face

    # -- sessions ---------------------------------------------------------------------------

    def _engine(self, params: dict[str, Any]) -> Engine:
        """An engine for the session's `cwd`, with the client's MCP servers."""
        cwd = params.get("cwd")
        if cwd is None:
            engine = self.state.engine(permission=self.permission)
        elif isinstance(cwd, str) and Path(cwd).is_absolute() and Path(cwd).is_dir():
            s = self.state
            here = AppState(s.provider, s.model, s.preset, Path(cwd).resolve(), s.config, s.trust)
            engine = here.engine(permission=self.permission)
        else:
            raise RpcError(INVALID_PARAMS, f"cwd must be an absolute directory, not {cwd!r}")
        engine.add_mcp_servers(mcp_servers(params.get("mcpServers")))
        return engine

    async def _opened(self, face: Face, **how: Any) -> str | None:
        """Open the face's session; the notices opening it said (a project config left
        untrusted, a session reopened as another), for the user to read in the editor, as
        `avatar chat` prints them: None when there were none."""
        untrusted = face.engine.untrusted_config
        face.heard = [untrusted.notice()] if untrusted is not None else []
        try:
            opened = await face.engine.open(**how)
        except AvatarError as e:
            await face.close()
            code = NOT_FOUND if isinstance(e, SessionNotFoundError) else INVALID_PARAMS
            raise RpcError(code, str(face.engine.registry.secrets().mask(str(e)))) from None
        finally:
            heard, face.heard = face.heard, None
        if not face.id:
            face.id = opened.session_id
        old = self.faces.pop(face.id, None)
        if old is not None:  # (loaded again: the one open before steps aside)
            await old.close()
        self.faces[face.id] = face
        face.kept()
        return "".join(f"notice: {line}\n" for line in heard) or None

    async def new_session(self, params: dict[str, Any]) -> dict[str, Any]:
        """`session/new`: a session on the default provider."""
        engine = self._failing(lambda: self._engine(params))
        face = Face("", engine, self._conn(), providers(engine))
        said = await self._opened(face)
        face.later(face.update(commands_update(face)))
        if said is not None:  # (after the answer: the client learns the id from it)
            face.later(face.update(message(said)))
        return {"sessionId": face.id, **face.opened()}

    async def load_session(self, params: dict[str, Any]) -> dict[str, Any]:
        """`session/load`: reopen any provider's session and replay its history."""
        sid = params["sessionId"]
        if not isinstance(sid, str) or not sid:
            raise RpcError(INVALID_PARAMS, "sessionId must be a session id")
        engine = self._failing(lambda: self._engine(params))
        face = Face(sid, engine, self._conn(), providers(engine))
        went = face.threads.where(sid)  # (moved to another agent's session: open that)
        said = await self._opened(face, resume=went[1] if went else sid)
        await face.replay()
        if said is not None:  # (after the history: what happened as it reopened)
            await face.update(message(said))
        face.later(face.update(commands_update(face)))
        return face.opened()

    async def list_sessions(self, params: dict[str, Any]) -> dict[str, Any]:
        """`session/list`: a page of every provider's sessions of the project."""
        cwd = params.get("cwd") or str(self.state.cwd)
        cursor = params.get("cursor")
        try:
            start = int(cursor) if cursor is not None else 0
        except (TypeError, ValueError):
            raise RpcError(INVALID_PARAMS, f"not a cursor of this list: {cursor!r}") from None
        engine = self._listing.get(cwd)
        if engine is None:
            engine = self._failing(lambda: self._engine({"cwd": cwd}))
            self._listing[cwd] = engine
        rows = await asyncio.to_thread(engine.library.sessions, None)
        mask = engine.registry.secrets().mask
        listed = []
        for s in rows[start : start + PAGE]:
            title = mask(s.name or s.title or "untitled")
            entry: dict[str, Any] = {
                "sessionId": s.id,
                "cwd": s.cwd or cwd,
                "title": f"{title} ({s.provider})",
                "_meta": {"provider": s.provider, "messages": s.messages},
            }
            if s.updated is not None:
                entry["updatedAt"] = s.updated.isoformat()
            listed.append(entry)
        answer: dict[str, Any] = {"sessions": listed}
        if start + PAGE < len(rows):
            answer["nextCursor"] = str(start + PAGE)
        return answer

    def _conn(self) -> Connection:
        assert self.conn is not None
        return self.conn

    @staticmethod
    def _failing(make: Any) -> Engine:
        try:
            engine: Engine = make()
        except AvatarError as e:
            raise RpcError(INVALID_PARAMS, str(e)) from None
        return engine


def prompt_of(blocks: Any) -> Prompt:
    """A `session/prompt`'s content as avatar's `Prompt`: text blocks, embedded resources
    (their text, named by their URI) and resource links as text; images attached."""
    if not isinstance(blocks, list):
        raise RpcError(INVALID_PARAMS, "prompt must be a list of content blocks")
    texts: list[str] = []
    images: list[Image] = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "image":
            try:
                data = base64.b64decode(str(block.get("data") or ""), validate=True)
            except (binascii.Error, ValueError):
                raise RpcError(INVALID_PARAMS, "an image block's data is not base64") from None
            name = f"image-{len(images) + 1}.{str(block.get('mimeType', 'x/png')).split('/')[-1]}"
            images.append(Image(name, str(block.get("mimeType") or "image/png"), data))
        elif kind == "resource":
            resource = block.get("resource") or {}
            if isinstance(resource.get("text"), str):
                texts.append(f"{resource.get('uri', '')}:\n```\n{resource['text']}\n```")
        elif kind == "resource_link":
            texts.append(f"[{block.get('name') or block.get('uri')}]({block.get('uri')})")
        else:
            sys.stderr.write(f"notice: a {kind} block of the prompt was left out\n")
    return Prompt("\n".join(t for t in texts if t), tuple(images))


def mcp_servers(given: Any) -> dict[str, dict[str, Any]]:
    """The client's stdio MCP servers (ACP's `McpServerStdio`: name, command, args, env as
    name/value pairs) by name; http and sse servers, which avatar does not advertise, are
    left out with a notice."""
    servers: dict[str, dict[str, Any]] = {}
    for server in given if isinstance(given, list) else []:
        if not isinstance(server, dict) or not isinstance(server.get("name"), str):
            continue
        if server.get("type") in ("http", "sse") or not isinstance(server.get("command"), str):
            sys.stderr.write(f"notice: MCP server {server['name']!r} left out: stdio only\n")
            continue
        env = {
            str(pair.get("name")): str(pair.get("value"))
            for pair in server.get("env") or []
            if isinstance(pair, dict)
        }
        args = [str(a) for a in server.get("args") or []]
        servers[server["name"]] = {"command": server["command"], "args": args, "env": env}
    return servers

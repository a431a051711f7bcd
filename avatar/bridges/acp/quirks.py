"""Agent-specific behaviour, keyed by `ProviderSpec.quirks` (the generic bridge serves all).

- `use_installed_claude`: claude-agent-acp bundles its own Claude Code; point it at the
  installed `claude` (config, PATH, bridges/node_modules/.bin) unless
  CLAUDE_CODE_EXECUTABLE is already set.
- `same_minute_load`: Gemini CLI's session files around `session/load` (measured with
  gemini-cli 0.61). A file is named after the minute its recording started
  (`session-YYYY-MM-DDTHH-MM-<id8>.jsonl`), and every load starts a new recording for the id:
  - within the minute of an existing file of that session, the new recording is appended to
    that very file and resets its messages: the load fails ("No previous sessions found") and
    the history is gone. avatar waits for the minute to turn (or refuses), and `HistoryGuard`
    backs the files up before any load and restores them when the load failed or shrank them;
  - in another minute the load works, but leaves a message-less companion file for the id;
    at its next start Gemini's session cleanup deletes every file of an id that has such a
    file, history included. `remove_companions` deletes those companions after each load and
    when the bridge stops.
  `guarded_load` wraps one `session/load` in all of that.
- `late_replay`: Gemini keeps sending replayed history after the load response; the bridge
  waits longer for the stream to go quiet (see `replay_quiet`).
- `list_from_disk`: do not trust `session/list`; continue-last lists through the provider's
  store (the engine's reader, `BridgeContext.store`), as for agents that cannot list.
- `cli_delete`: the agent deletes a session through its own command line (`own_cli`).
- `delete_archives`: the agent's `session/delete` only archives the session (codex-acp, unless
  its client speaks JetBrains' AIR session index); the engine deletes through the provider's
  store instead (`avatar.engine.deleting`).
- `lazy_session_files`: the agent writes nothing of a session before its first prompt (codex:
  its rollout file starts with the first turn), so a warm agent can open one unused
  (`ACPBridge.warm_up`) and leave no session behind in its store or avatar's records.
- `empty_session_files`: the agent writes a session's file at `session/new`, without any
  message until the first prompt, and listings hide such files (Gemini CLI: its own start-up
  records one too); so a warm agent can open one unused (`ACPBridge.warm_up`), and when it is
  never used its message-less files are removed (`remove_unused`).
- `shared_process`: the agent keeps several sessions in one process, as ACP allows (codex-acp,
  claude-agent-acp, Gemini CLI): given a pool (the server's), a bridge runs its session on
  the running agent started as it would start its own (`avatar.bridges.acp.shared`).
- `quiet_open`: the agent says nothing unasked as a session opens (codex-acp, claude-agent-acp,
  Gemini CLI; tests/integration/test_agent_banner.py drives each), so its first prompt goes as
  soon as the session is open, not once it has been quiet for `stream.OPEN_QUIET` (the guard
  that keeps a start-up banner out of the first answer, for every other agent).
- `missing_file_empty`: Gemini's write_file reads the file through `fs/read_text_file` first
  and takes only a thrown Error with code ENOENT as "not there"; the JSON-RPC error of a
  missing file reaches it as a plain object, so it could never create a file. A missing file
  inside the agent's directories reads as empty for it (`FileAccess.missing_reads_empty`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from avatar.core.errors import ProviderError
from avatar.providers.registry import ProviderSpec

# How long the agent must stay silent after a load before its replay counts as finished.
REPLAY_QUIET = 0.15
LATE_REPLAY_QUIET = 0.6
REPLAY_LIMIT = 15.0


def quiet_open(spec: ProviderSpec) -> bool:
    """Whether the agent is known to say nothing unasked as a session opens (`quiet_open`)."""
    return "quiet_open" in spec.quirks


def replay_quiet(spec: ProviderSpec) -> float:
    """Quiet period that ends a load's replay window for this provider."""
    return LATE_REPLAY_QUIET if "late_replay" in spec.quirks else REPLAY_QUIET


# -- Gemini's same-minute load -----------------------------------------------------------------


def gemini_home(env: Mapping[str, str]) -> Path:
    """Gemini CLI's ~/.gemini as the agent sees it (GEMINI_CLI_HOME overrides HOME)."""
    home = env.get("GEMINI_CLI_HOME") or env.get("HOME") or str(Path.home())
    return Path(home) / ".gemini"


def gemini_session_files(env: Mapping[str, str], session_id: str) -> list[Path]:
    """The chat files that record `session_id` (any project)."""
    short = session_id[:8]
    out = []
    for path in (gemini_home(env) / "tmp").glob(f"*/chats/session-*-{short}.json*"):
        try:
            with path.open("rb") as f:
                head = f.read(4096)
        except OSError:
            continue
        if session_id.encode() in head:
            out.append(path)
    return sorted(out)


def has_messages(path: Path) -> bool:
    """True when a Gemini session file records at least one message (not just metadata)."""
    try:
        with path.open("rb") as f:
            for raw in f:
                if b'"type"' not in raw or b'"id"' not in raw:
                    continue
                try:
                    record = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(record, dict) and "id" in record and "type" in record:
                    return True
    except OSError:
        return False
    return False


def remove_companions(env: Mapping[str, str], session_id: str) -> list[Path]:
    """Delete the message-less files of a session that also has a file with its history.

    Gemini's start-up cleanup treats such a file as an abandoned session and deletes every
    file of that id with it; removing the empty companion keeps the history alive.
    """
    files = gemini_session_files(env, session_id)
    with_history = [f for f in files if has_messages(f)]
    if not with_history:
        return []
    removed = []
    for path in files:
        if path not in with_history:
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def remove_unused(env: Mapping[str, str], session_id: str) -> list[Path]:
    """Delete the files of a Gemini session that never got a message (one opened ahead and
    never used: quirk `empty_session_files`)."""
    removed = []
    for path in gemini_session_files(env, session_id):
        if not has_messages(path):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def created_minute(path: Path) -> str | None:
    """`YYYY-MM-DDTHH-MM` from a Gemini session file name, if it has one."""
    stem = path.name.removeprefix("session-")
    minute = stem[:16]
    try:
        datetime.strptime(minute, "%Y-%m-%dT%H-%M")
    except ValueError:
        return None
    return minute


def current_minute() -> str:
    """The current UTC minute in Gemini's file-name format."""
    return time.strftime("%Y-%m-%dT%H-%M", time.gmtime())


@dataclass
class HistoryGuard:
    """Copies of a session's files taken before a risky load, restored if the load hurt them."""

    backups: dict[Path, Path] = field(default_factory=dict)
    sizes: dict[Path, int] = field(default_factory=dict)

    @classmethod
    def take(cls, files: list[Path], backup_dir: Path) -> HistoryGuard:
        """Back up `files` into `backup_dir` (created as needed)."""
        guard = cls()
        if not files:
            return guard
        backup_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S")
        for path in files:
            copy = backup_dir / f"{path.name}.{stamp}.bak"
            shutil.copy2(path, copy)
            guard.backups[path] = copy
            guard.sizes[path] = path.stat().st_size
        return guard

    def damaged(self) -> list[Path]:
        """Files that vanished or shrank since the backup (an append-only log never shrinks)."""
        bad = []
        for path, size in self.sizes.items():
            try:
                if path.stat().st_size < size:
                    bad.append(path)
            except FileNotFoundError:
                bad.append(path)
        return bad

    def restore(self, only_damaged: bool = False) -> list[Path]:
        """Put the backed-up files back; returns the files restored."""
        targets = self.damaged() if only_damaged else list(self.backups)
        for path in targets:
            shutil.copy2(self.backups[path], path)
        return targets

    def discard(self) -> None:
        """Delete the backups (the load went well)."""
        for copy in self.backups.values():
            copy.unlink(missing_ok=True)
        self.backups.clear()
        self.sizes.clear()


@dataclass
class SameMinuteWait:
    """How long to wait out Gemini's same-minute load bug, and how to sleep meanwhile.

    A public seam: the bridge holds one (`ACPBridge.same_minute`) that tests may change, e.g.
    `limit = 0` to refuse at once, or a `sleep` that returns without waiting.
    """

    limit: float = 60.0  # wait at most this long for the minute to turn; longer: refuse
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


Notify = Callable[[str, str], None]
"""Tells the user something: (message, level "info" | "warning")."""


@contextlib.asynccontextmanager
async def guarded_load(
    provider: str,
    env: Mapping[str, str],
    session_id: str,
    backup_dir: Path,
    wait: SameMinuteWait,
    notify: Notify,
) -> AsyncIterator[None]:
    """Around one `session/load` of an agent with the same-minute bug (see the docstring).

    Before: wait for the minute to turn (or refuse: a ProviderError, which ends the open,
    since the session is there and may be loaded a minute later) and back the session's
    files up. After a failed load: restore them; after a good one: remove the empty
    companion and restore only what shrank.
    """
    files = gemini_session_files(env, session_id)
    if current_minute() in {created_minute(f) for f in files}:
        # The minute its file was started (created, or last loaded): loading now would
        # append to that very file and wipe it.
        why = (
            f"{provider} cannot load session {session_id} before the clock minute turns "
            "(a Gemini CLI bug would destroy its history)"
        )
        left = 60.0 - time.time() % 60.0
        if left > wait.limit:
            raise ProviderError(f"{why}; try again in {left:.0f} s")
        notify(f"{why}; waiting {left:.0f} s", "info")
        await wait.sleep(left + 0.5)
    guard = HistoryGuard.take(files, backup_dir)
    try:
        yield
    except BaseException:
        restored = guard.restore()
        remove_companions(env, session_id)
        if restored:
            notify(
                f"{provider} damaged the history of {session_id} while failing to load it; "
                "avatar restored it from its backup",
                "warning",
            )
        guard.discard()
        raise
    remove_companions(env, session_id)
    if guard.restore(only_damaged=True):
        notify(
            f"{provider} shrank the history file of {session_id} while loading it; "
            "avatar restored it from its backup",
            "warning",
        )
    guard.discard()

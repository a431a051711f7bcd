"""The engine: config → provider registry → active bridge, one session API for all providers."""

from __future__ import annotations

import importlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.bridges.base import BaseBridge, BridgeContext, OpenRequest
from avatar.config import Settings, avatar_home
from avatar.errors import AvatarError, NotSupportedError, SessionNotFoundError, UsageError
from avatar.handoff import build_handoff, seed_prompt
from avatar.ids import check_id
from avatar.providers import AUTO_ORDER, BUILTIN, ProviderSpec, find_executable, resolve_spec
from avatar.sessions.store import SessionStore
from avatar.sessions.types import SessionInfo, Transcript, TranscriptMessage

if TYPE_CHECKING:
    # Listing sessions never builds an event; the turn and open paths import them when used.
    from avatar.events import BaseEvent, PermissionRequested, SessionStarted
    from avatar.session_settings import SettingsSource

Asker = Callable[["PermissionRequested"], Awaitable[bool]]


def load_object(path: str) -> Any:
    """Import `module:attr` lazily (bridges and stores pull in their heavy deps only when used)."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass
class _Live:
    """What this run saw of the current session, for handoffs when no store has it yet."""

    info: SessionInfo
    messages: list[TranscriptMessage] = field(default_factory=list)
    answer: list[str] = field(default_factory=list)


class Engine:
    """Owns the provider registry and the active bridge; fans bridge events out to listeners.

    Bridges start lazily. Session listing reads each provider's store on disk and never
    spawns an agent; resuming by id finds the provider that owns the id.
    """

    def __init__(
        self,
        settings: Settings,
        cwd: Path,
        *,
        env: Mapping[str, str] | None = None,
        home: Path | None = None,
        interactive: bool = False,
        source: SettingsSource | None = None,
    ) -> None:
        self.settings = settings
        #: How `settings` were made; lets a resumed session get its own preset and overrides.
        self.source = source
        # The settings the open session sets itself (flags, then its record when resumed).
        self._own: dict[str, Any] = source.given() if source is not None else {}
        self.cwd = cwd.resolve()
        self.env: Mapping[str, str] = dict(os.environ if env is None else env)
        self.home = home or avatar_home()
        self.interactive = interactive
        self.asker: Asker | None = None
        self.listeners: list[Callable[[BaseEvent], None]] = []
        self.registry = self._build_registry()
        self.bridge: BaseBridge | None = None
        self.model: str | None = settings.model
        self._live: _Live | None = None
        self._pending_seed: str | None = None
        self._stores: dict[str, SessionStore | None] = {}

    # ----- registry ---------------------------------------------------------------------

    def _build_registry(self) -> dict[str, ProviderSpec]:
        names = list(BUILTIN) + [n for n in self.settings.providers if n not in BUILTIN]
        registry: dict[str, ProviderSpec] = {}
        for name in names:
            spec = resolve_spec(name, self.settings.provider_config(name))
            if spec is not None:
                registry[name] = spec
        return registry

    def spec(self, name: str) -> ProviderSpec:
        """The provider called `name`; a UsageError lists the known ones."""
        try:
            return self.registry[name]
        except KeyError:
            known = ", ".join(self.registry)
            raise UsageError(f"unknown provider {name!r} (known: {known})") from None

    def provider_env(self, spec: ProviderSpec) -> dict[str, str]:
        """The full environment the provider's process runs with."""
        return {**self.env, **spec.env}

    def default_provider(self) -> str:
        """DESIGN §3: config/preset provider, else native with credentials, else the first CLI."""
        if self.settings.provider:
            return self.spec(self.settings.provider).name
        from avatar.native.models import native_has_credentials

        if native_has_credentials(self.settings, self.env):
            return "native"
        for name in AUTO_ORDER:
            spec = self.registry[name]
            if spec.executable and find_executable(spec.executable, self.env.get("PATH")):
                return name
        hints = "; ".join(
            f"{s.name}: {s.auth_hint or s.install_hint}" for s in self.registry.values()
        )
        raise AvatarError(f"no usable provider found. Looked for: {hints}")

    # ----- stores -------------------------------------------------------------------------

    def store(self, provider: str) -> SessionStore | None:
        """The on-disk session reader of a provider (None when it has none)."""
        if provider not in self._stores:
            spec = self.spec(provider)
            store = None
            if spec.store:
                cls = load_object(spec.store)
                store = cls(provider, self.provider_env(spec), self.home)
            self._stores[provider] = store
        return self._stores[provider]

    def _listing_providers(self) -> list[str]:
        # Providers sharing a store (claude and claude-acp) are listed once, under the first.
        seen: set[str] = set()
        out = []
        for name, spec in self.registry.items():
            if spec.store and spec.store not in seen:
                seen.add(spec.store)
                out.append(name)
        return out

    def list_sessions(
        self, provider: str | None = None, *, any_cwd: bool = False
    ) -> list[SessionInfo]:
        """Sessions of one provider (or every provider when None), newest first."""
        names = [self.spec(provider).name] if provider else self._listing_providers()
        cwd = None if any_cwd else self.cwd
        sessions: list[SessionInfo] = []
        for name in names:
            store = self.store(name)
            if store is not None:
                sessions.extend(store.list(cwd))
        sessions.sort(key=_sort_key, reverse=True)
        return sessions

    def warnings(self) -> list[str]:
        """Warnings the stores collected (skipped files and lines)."""
        return [w for s in self._stores.values() if s is not None for w in s.warnings]

    def find_session(self, ref: str, provider: str | None = None) -> SessionInfo:
        """The one session whose id is `ref` or starts with it, in any cwd."""
        check_id(ref)
        names = [self.spec(provider).name] if provider else self._listing_providers()
        found: dict[tuple[str, str], SessionInfo] = {}
        for name in names:
            store = self.store(name)
            if store is None:
                continue
            for info in store.find(ref):
                found[(info.provider, info.id)] = info
        exact = [s for s in found.values() if s.id == ref]
        matches = exact or list(found.values())
        if not matches:
            where = f" for {provider}" if provider else ""
            raise SessionNotFoundError(f"no session{where} matches {ref!r}")
        if len(matches) > 1:
            cands = ", ".join(f"{s.id} ({s.provider})" for s in matches[:8])
            raise UsageError(f"session id {ref!r} is ambiguous: {cands}")
        return matches[0]

    def transcript(self, info: SessionInfo) -> Transcript:
        """The canonical transcript of a listed session."""
        store = self.store(info.provider)
        if store is None:
            raise NotSupportedError(info.provider, "reading session history")
        return store.transcript(info.id)

    def delete_session(self, info: SessionInfo) -> None:
        """Delete a session where its provider allows it."""
        store = self.store(info.provider)
        if store is None:
            raise NotSupportedError(info.provider, "deleting a session")
        store.delete(info.id)

    # ----- permissions and events --------------------------------------------------------

    def emit(self, event: BaseEvent) -> None:
        """Send an out-of-turn event to every listener."""
        for listener in self.listeners:
            listener(event)

    async def _permission(self, request: PermissionRequested) -> bool:
        from avatar.events import Notice

        policy = self.settings.permission
        if policy == "allow":
            allowed = True
        elif policy == "ask" and self.asker is not None:
            allowed = await self.asker(request)
        else:
            allowed = False
            if policy == "ask":
                self.emit(
                    Notice(
                        message=f"denied {request.title!r}: nobody can answer a permission "
                        "prompt here; use --permission allow to allow such actions",
                        level="warning",
                    )
                )
        request.decision = "allow" if allowed else "deny"
        return allowed

    # ----- bridges ------------------------------------------------------------------------

    def _context(self, spec: ProviderSpec) -> BridgeContext:
        return BridgeContext(
            spec=spec,
            cwd=self.cwd,
            settings=self.settings,
            avatar_home=self.home,
            env=self.provider_env(spec),
            model=self.model or spec.model,
            system_prompt=self.settings.system_prompt,
            permission=self._permission,
            emit=self.emit,
        )

    async def start(self, provider: str) -> BaseBridge:
        """Make `provider` the active bridge, starting it (stopping any other)."""
        spec = self.spec(provider)
        if self.bridge is not None and self.bridge.name == spec.name:
            return self.bridge
        await self.stop()
        cls = load_object(spec.bridge)
        bridge: BaseBridge = cls(self._context(spec))
        await bridge.start()
        self.bridge = bridge
        return bridge

    async def open(self, request: OpenRequest) -> SessionStarted:
        """Open a session on the active bridge; an unsupported resume falls back to new."""
        from avatar.events import Notice

        bridge = self._require_bridge()
        try:
            started = await bridge.open(request)
        except NotSupportedError as e:
            if request.mode == "new":
                raise
            self.emit(Notice(message=f"{e}; opened a new session instead", level="warning"))
            started = await bridge.new_session()
        self._live = _Live(
            SessionInfo(id=started.session_id, provider=started.provider, cwd=str(self.cwd))
        )
        if started.how in ("new", "forked"):
            self.remember_settings(fresh=True)
        self.emit(started)
        return started

    async def open_on(self, provider: str, request: OpenRequest) -> SessionStarted:
        """Start `provider` and open a session on it (a resumed or forked one with the
        settings of the session it comes from)."""
        if request.mode in ("resume", "continue", "fork"):
            await self._adopt_session_settings(provider, request.session_id)
        await self.start(provider)
        return await self.open(request)

    # ----- per-session settings (DESIGN §4) ------------------------------------------------

    def remember_settings(self, *, fresh: bool = False) -> None:
        """Record the open session's preset and the settings it sets itself.

        `fresh`: the session was just created, so it has no earlier record to replace.
        """
        from avatar.session_settings import SessionSettings, SessionSettingsLog, overrides_of

        live = self._live
        if live is None:
            return
        preset = self.settings.preset
        current = self.settings.model_copy(update={"model": self.model})
        overrides: dict[str, str] = {}
        # With nothing of its own (no flags, no record, no `/model`), the settings are the
        # preset's: nothing to compare, and no config file is read again.
        if self.source is not None and (self._own or self.model != self.settings.model):
            try:
                overrides = overrides_of(current, self.source.load(preset, {}))
            except AvatarError:
                overrides = {}
        log = SessionSettingsLog(self.home)
        if preset is None and not overrides and (fresh or log.get(live.info.id) is None):
            return  # nothing of its own: the config as it is will do (and no file is written)
        log.put(
            SessionSettings(
                provider=live.info.provider, id=live.info.id, preset=preset, overrides=overrides
            )
        )

    async def _adopt_session_settings(self, provider: str, session_id: str | None) -> None:
        """Before resuming: the session's preset (as the config defines it now) and overrides,
        under this run's own flags. The bridge restarts if that changes its settings."""
        from avatar.events import Notice
        from avatar.session_settings import SessionSettingsLog

        log = SessionSettingsLog(self.home)
        if self.source is None or not log.path.exists():
            return
        if session_id is None:  # --continue: the newest session is the one the bridge opens
            try:
                newest = self.list_sessions(provider)
            except AvatarError:
                return
            session_id = newest[0].id if newest else None
        record = log.get(session_id) if session_id else None
        if record is None:
            return
        preset = self.settings.preset if self.source.preset_given else record.preset
        if preset is not None and preset not in self.settings.presets:
            self.emit(
                Notice(
                    message=f"session {session_id} started from preset {preset!r}, which the "
                    "config no longer defines; using the config without it",
                    level="warning",
                )
            )
            preset = None
        try:
            own = {**record.overrides, **self.source.given()}
            settings = self.source.load(preset, own)
        except AvatarError as e:
            self.emit(Notice(message=f"settings of session {session_id} not applied: {e}"))
            return
        self._own = own
        if settings == self.settings:
            return
        self.settings = settings
        self.model = settings.model
        if self.bridge is not None and self.bridge.name == self.spec(provider).name:
            await self.stop()  # it was started with other settings

    async def resume(self, ref: str, provider: str | None = None) -> SessionStarted:
        """Resume a session by id or unique prefix, on whichever provider owns it."""
        info = self.find_session(ref, provider)
        return await self.open_on(info.provider, OpenRequest("resume", info.id))

    async def continue_last(self, provider: str) -> SessionStarted:
        """Open the newest session of `provider` in this cwd."""
        return await self.open_on(provider, OpenRequest("continue"))

    async def fork(self, ref: str) -> SessionStarted:
        """Fork a session into a new one on its own provider."""
        info = self.find_session(ref)
        return await self.open_on(info.provider, OpenRequest("fork", info.id))

    def seed(self, handoff: str) -> None:
        """Prefix the next prompt with handed-over context."""
        self._pending_seed = handoff

    def handoff_from(self, info: SessionInfo) -> str:
        """The handoff text of a stored session."""
        return build_handoff(self.transcript(info))

    def current_handoff(self) -> str | None:
        """The handoff of the session open now: its store's transcript, else what this run saw."""
        live = self._live
        if live is None:
            return None
        store = self.store(live.info.provider)
        if store is not None:
            try:
                return build_handoff(store.transcript(live.info.id))
            except AvatarError:
                pass
        if not live.messages:
            return None
        return build_handoff(Transcript(info=live.info, messages=live.messages))

    async def switch_provider(self, name: str, *, handoff: bool = True) -> SessionStarted:
        """Switch mid-project: a new session on `name`, seeded with the current conversation."""
        from avatar.events import Notice

        text = self.current_handoff() if handoff else None
        started = await self.open_on(name, OpenRequest("new"))
        if text:
            self.seed(text)
            self.emit(Notice(message=f"the conversation so far will be handed to {name}"))
        return started

    async def send(self, prompt: str) -> AsyncIterator[BaseEvent]:
        """Run one turn on the active bridge, yielding its events."""
        from avatar.events import TextDelta, TurnFinished

        bridge = self._require_bridge()
        text = prompt
        if self._pending_seed:
            text = seed_prompt(self._pending_seed, prompt)
            self._pending_seed = None
        live = self._live
        if live is not None:
            live.messages.append(TranscriptMessage(role="user", text=prompt))
            live.answer = []
        async for event in bridge.send(text):
            if live is not None and isinstance(event, TextDelta) and not event.replay:
                live.answer.append(event.text)
            if live is not None and isinstance(event, TurnFinished) and live.answer:
                live.messages.append(TranscriptMessage(role="assistant", text="".join(live.answer)))
            yield event

    async def cancel(self) -> None:
        """Interrupt the running turn."""
        if self.bridge is not None:
            await self.bridge.cancel()

    async def stop(self) -> None:
        """Stop the active bridge."""
        bridge, self.bridge = self.bridge, None
        if bridge is not None:
            await bridge.stop()

    def _require_bridge(self) -> BaseBridge:
        if self.bridge is None:
            raise AvatarError("no provider started")
        return self.bridge


def _sort_key(info: SessionInfo) -> float:
    stamp = info.updated or info.created
    return stamp.timestamp() if stamp else 0.0

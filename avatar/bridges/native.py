"""NativeBridge: the built-in agent behind avatar's session API (every capability is true).

The model comes from `ctx.model` (the `-m` flag, preset or provider config), else
`default_model`, else the built-in default, resolved by `ModelResolver`. `open()` modes:
new (an explicit `-s ID` resumes that id if it exists, else creates it), resume (id or
unique prefix, any project), continue (newest in the cwd; a new session and a notice when
there is none) and fork. A resume or fork the engine has already resolved (`OpenRequest.info`)
opens that session's id as it is. Listing and deleting are the engine's, through its store.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.bridges.base import BaseBridge, BridgeContext, OpenRequest
from avatar.core.events import BaseEvent, Notice, SessionStarted
from avatar.core.prompts import Prompt
from avatar.native.store.manager import SessionManager, check_session_id
from avatar.providers.capabilities import SessionCapabilities

if TYPE_CHECKING:
    from avatar.core.events import OpenHow
    from avatar.native.agent.config import ClientFactory, SessionConfig
    from avatar.native.agent.session import AgentSession
    from avatar.native.models import ModelInfo, ModelResolver


class NativeBridge(BaseBridge):
    """The native agent as a bridge."""

    def __init__(self, ctx: BridgeContext) -> None:
        super().__init__(ctx)
        self.capabilities = SessionCapabilities.named(
            "list", "load", "resume", "continue_last", "fork", "delete", "cancel"
        )
        self.manager = SessionManager(ctx.avatar_home)
        self.env = dict(ctx.env) if ctx.env else dict(os.environ)
        self.resolver: ModelResolver | None = None
        self.model: ModelInfo | None = None
        self.session: AgentSession | None = None
        self.plan = False  # plan mode (`set_plan`), kept for sessions opened later
        # Tests and embedders may set a factory making LLM clients (e.g. with a transport).
        self.client_factory: ClientFactory | None = None

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        """Resolve the model (a clear usage error if unknown); nothing is spawned."""
        from avatar.native.models import ModelResolver

        self.resolver = ModelResolver.from_settings(self.ctx.settings, self.env)
        self.model = self._pick_model()

    def _requested_model(self) -> str | None:
        cfg = self.ctx.settings.provider_config(self.name) if self.ctx.settings else None
        return self.ctx.model or self.ctx.spec.model or (cfg.model if cfg else None)

    def _pick_model(self) -> ModelInfo:
        from avatar.native.models import ModelInfo, ollama_models, ollama_running

        assert self.resolver is not None
        requested = self._requested_model()
        model = self.resolver.resolve(requested)
        if requested or self.resolver.default_model:
            return model
        # Nothing chosen and no key for the built-in default: use a local Ollama if it runs.
        if model.api_key(self.env) or self.env.get("OPENAI_BASE_URL"):
            return model
        if self.env.get("ANTHROPIC_BASE_URL") and model.api == "anthropic":
            return model
        if ollama_running():
            names = ollama_models()
            if names:
                return ModelInfo(id=names[0], provider="ollama", api="openai", builtin=False)
        return model

    async def stop(self) -> None:
        """Close the open session (flush, fsync, unlock)."""
        if self.session is not None:
            await self.session.close()
            self.session = None

    @property
    def model_in_use(self) -> str | None:
        """The full id (`provider/id`) of the open session's model, else of the resolved one."""
        session_model = self.session.model if self.session is not None else None
        model = session_model or self.model
        return model.full_id if model is not None else None

    # -- opening ----------------------------------------------------------------------------

    async def open(self, request: OpenRequest) -> SessionStarted:
        """Open as `request` asks; a session the engine resolved (`request.info`) is not
        looked up again, an id or unique prefix it could not resolve is looked up here."""
        if request.mode == "new":
            return await self._new(request.session_id)
        if request.mode == "continue":
            return await self._continue()
        if request.info is not None:
            if request.mode == "fork":
                return await self._fork(request.info.id)
            # The file the engine found (not avatar's copy of the turns, when it is gone).
            listed = request.info.path if not request.files_gone else None
            return await self._reopen(request.info.id, "resumed", Path(listed) if listed else None)
        assert request.session_id, f"{request.mode} needs a session id"
        session_id = self.manager.resolve(request.session_id).id
        if request.mode == "fork":
            return await self._fork(session_id)
        return await self._reopen(session_id, "resumed")

    def _config(self) -> SessionConfig:
        from avatar.native.agent.compaction import strategy_for
        from avatar.native.agent.config import SessionConfig

        assert self.resolver is not None
        settings = self.ctx.settings
        cfg = settings.provider_config(self.name)
        additions = [self.ctx.system_prompt or settings.system_prompt or ""]
        config = SessionConfig(
            cwd=Path(self.ctx.cwd),
            scope=settings.scope,
            env=self.env,
            resolver=self.resolver,
            permission=self.ctx.permission,
            additional_dirs=list(self.ctx.additional_dirs),
            prompt_additions=[a for a in additions if a],
            compaction=strategy_for(cfg.compaction if cfg else None),
            auto_compact=cfg.auto_compact if cfg and cfg.auto_compact is not None else True,
            compact_threshold=(
                cfg.compact_threshold if cfg and cfg.compact_threshold is not None else 0.8
            ),
            preset=settings.preset,
            outside_turn=self.ctx.emit,
        )
        if self.client_factory is not None:
            config.client_factory = self.client_factory
        return config

    async def _fresh_session(self) -> AgentSession:
        from avatar.native.agent.session import AgentSession

        if self.resolver is None:
            await self.start()
        if self.session is not None:
            await self.session.close()
            self.session = None
        session = AgentSession(self._config(), self.manager)
        return session

    def _started(self, how: OpenHow) -> SessionStarted:
        assert self.session is not None and self.session.model is not None
        self.session_id = self.session.session_id
        assert self.session_id is not None
        return SessionStarted(
            session_id=self.session_id,
            provider=self.name,
            how=how,
            model=self.session.model.full_id,
            cwd=str(self.ctx.cwd),
        )

    def _explicit_model(self) -> ModelInfo | None:
        assert self.resolver is not None
        requested = self._requested_model()
        return self.resolver.resolve(requested) if requested else None

    async def _new(self, session_id: str | None) -> SessionStarted:
        """A new session; with an explicit id, resume it when it already exists."""
        if session_id is not None:
            check_session_id(session_id)
            if self.manager.exists(session_id):  # an exact id: no prefix lookup needed
                return await self._reopen(session_id, "resumed")
        session = await self._fresh_session()
        assert self.model is not None
        session.start(self.model, session_id)
        self.session = session
        return self._started("new")

    async def _continue(self) -> SessionStarted:
        """Reopen the newest session of the cwd, or start one (with a notice)."""
        latest = self.manager.latest(Path(self.ctx.cwd))
        if latest is None:
            self.ctx.emit(
                Notice(message="no native session in this directory to continue; started a new one")
            )
            return await self._new(None)
        return await self._reopen(latest.id, "continued")

    async def _reopen(
        self, session_id: str, how: OpenHow, path: Path | None = None
    ) -> SessionStarted:
        """Open session `session_id` from its file `path` (looked up when not given)."""
        from avatar.native.store.lockwait import open_when_free

        session = await self._fresh_session()
        found = path or self.manager.path_of(session_id)
        await open_when_free(
            session_id,
            found or Path(session_id),
            lambda: session.resume(session_id, self._explicit_model(), found),
            wait=self.ctx.wait_busy,
            notify=lambda message: self.ctx.emit(Notice(message=message)),
        )
        self.session = session
        return self._started(how)

    async def _fork(self, session_id: str) -> SessionStarted:
        session = await self._fresh_session()
        session.fork(session_id, self._explicit_model())
        self.session = session
        return self._started("forked")

    # -- turns ------------------------------------------------------------------------------

    @property
    def takes_images(self) -> bool:
        """Both APIs the native agent speaks (Anthropic, OpenAI) take images."""
        return True

    async def send(self, prompt: str | Prompt) -> AsyncIterator[BaseEvent]:
        """Run one turn; events end with `TurnFinished`."""
        prompt = Prompt.of(prompt)
        if self.session is None:
            self.ctx.emit(await self._new(None))
        assert self.session is not None
        self.session.set_plan(self.plan)  # (a session opened since keeps the mode)
        async for event in self.session.send_message(prompt.recorded, prompt.images):
            yield event

    @property
    def can_plan(self) -> bool:
        """The native agent's plan mode: read-only tools, and the model told to plan."""
        return True

    async def set_plan(self, on: bool) -> None:
        """Plan mode on or off from the next model call."""
        self.plan = on
        if self.session is not None:
            self.session.set_plan(on)

    async def cancel(self) -> None:
        """Abort the running turn (it ends with stop reason `cancelled`)."""
        if self.session is not None:
            await self.session.abort()

    async def steer(self, text: str) -> bool:
        """Add text to the running turn; it reaches the model before its next call. False
        when no turn would read it (none runs, or it has made its last call)."""
        return self.session is not None and self.session.steer(text)

    async def set_model(self, model: str) -> None:
        """Switch model (id, provider/id or unique prefix) from the next call on."""
        if self.resolver is None:
            await self.start()
        assert self.resolver is not None
        info = self.resolver.resolve(model)
        self.model = info
        if self.session is not None:
            self.session.set_model(info)

    async def compact(self) -> str:
        """Compact the open session's context now (the REPL's /compact)."""
        if self.session is None:
            return "no session is open"
        return await self.session.compact()

    def status(self) -> dict[str, Any]:
        """Model, context use, tokens and cost."""
        if self.session is None:
            return {"model": self.model.full_id} if self.model else {}
        return self.session.status()

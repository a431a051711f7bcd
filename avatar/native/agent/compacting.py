"""Compactor: when and how an open native session's context is compacted.

The strategies in `avatar.native.agent.compaction` only plan a compaction from a list of messages;
this component applies them to a live session: automatically before a model call once the
context passes `compact_threshold`, once more when the provider rejects the context as too
long, and on request (`/compact`). The `CompactionEntry` it plans is recorded through the
session like any other entry, so a resume rebuilds the same compacted context.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from avatar.core.errors import AvatarError
from avatar.core.events import Notice
from avatar.native.agent.compaction import (
    SUMMARY_INSTRUCTIONS,
    SUMMARY_SYSTEM,
    CompactionStrategy,
    NoCompaction,
    SummaryCompaction,
    estimate_tokens,
    transcript_for_summary,
)
from avatar.native.llm.types import ChatRequest, Message

if TYPE_CHECKING:
    from avatar.native.agent.config import SessionConfig
    from avatar.native.agent.context import SessionState
    from avatar.native.agent.loop import Agent, Emit
    from avatar.native.models import ModelInfo
    from avatar.native.store.entries import BaseEntry


class CompactionHost(Protocol):
    """What a `Compactor` needs from its session (`AgentSession` provides it)."""

    @property
    def config(self) -> SessionConfig:
        """The session's settings: strategy, threshold, how much to keep."""
        ...

    @property
    def state(self) -> SessionState | None:
        """The open session's folded state (None before one is opened)."""
        ...

    @property
    def model(self) -> ModelInfo | None:
        """The model the next call goes to."""
        ...

    @property
    def agent(self) -> Agent | None:
        """The loop whose client writes summaries."""
        ...

    def context_tokens(self) -> int:
        """The context's current size in tokens."""
        ...

    def estimated_context(self) -> int:
        """The context's size estimated from its characters alone (before and after a
        compaction compare like with like)."""
        ...

    def record_entry(self, entry: BaseEntry) -> None:
        """Write an entry to the session file and fold it into the state."""
        ...


# Below this much conversation (chars/4), compacting cannot make the context smaller.
MIN_COMPACT_TOKENS = 1000


class Compactor:
    """Compacts one session's context: automatically, on overflow, or when asked."""

    def __init__(self, session: CompactionHost) -> None:
        self.session = session

    def keep_tokens(self) -> int:
        """How much recent context a compaction keeps verbatim."""
        config = self.session.config
        if config.keep_recent_tokens is not None:
            return config.keep_recent_tokens
        model = self.session.model
        assert model is not None
        return max(1000, min(20_000, model.context_window // 4))

    async def before_request(self, emit: Emit) -> None:
        """Compact when the context has passed the threshold (if automatic compaction is on)."""
        config = self.session.config
        if not config.auto_compact or isinstance(config.compaction, NoCompaction):
            return
        model = self.session.model
        assert model is not None
        if self.session.context_tokens() <= config.compact_threshold * model.context_window:
            return
        try:
            await self.compact(config.compaction, force=False, emit=emit)
        except AvatarError as e:
            # The turn can still go on: the model call may fit, or `on_overflow` tries again.
            emit(Notice(message=f"automatic compaction failed: {e}", level="warning"))

    async def on_overflow(self, emit: Emit) -> bool:
        """The provider rejected the context as too long: compact once; True to retry."""
        strategy = self.session.config.compaction
        if isinstance(strategy, NoCompaction):
            return False
        try:
            return await self.compact(strategy, force=True, emit=emit) is not None
        except AvatarError:
            return False  # the overflow error itself then ends the turn

    async def compact_now(self, emit: Emit) -> str:
        """Compact as the user asked (`/compact`); the line saying what happened (the caller
        shows it, so no notice is emitted)."""
        state = self.session.state
        assert state is not None
        talk = estimate_tokens(state.messages)
        if talk < MIN_COMPACT_TOKENS:
            # A summary of so little would be as long as what it replaces, or longer.
            return f"nothing to compact: the conversation (~{talk:,} tokens) is already small"
        strategy = self.session.config.compaction
        if isinstance(strategy, NoCompaction):
            strategy = SummaryCompaction()  # `none` only turns the automatic kind off
        done = await self.compact(strategy, force=True, emit=emit, announce=False)
        return done or "nothing to compact"

    async def compact(
        self, strategy: CompactionStrategy, *, force: bool, emit: Emit, announce: bool = True
    ) -> str | None:
        """Apply `strategy`; the one-line summary of it (emitted as a notice when
        `announce`), or None when nothing changed."""
        state = self.session.state
        assert state is not None
        before = self.session.context_tokens()
        estimated_before = self.session.estimated_context()
        count = len(state.messages)
        entry = await strategy.plan(
            state.messages,
            keep_tokens=self.keep_tokens(),
            summarize=self._summarize,
            force=force,
        )
        if entry is None:
            return None
        entry.tokens_before = before
        self.session.record_entry(entry)
        after = self.session.estimated_context()  # like with like
        kept = len(state.messages) - (1 if entry.summary else 0)
        how = "summarized" if entry.summary else "dropped"
        message = (
            f"context compacted ({strategy.name}): {count - kept} older messages {how}, "
            f"{kept} kept; ~{estimated_before:,} → ~{after:,} tokens (estimated)"
        )
        if announce:
            emit(Notice(message=message))
        return message

    async def _summarize(self, messages: list[Message]) -> str:
        agent, model = self.session.agent, self.session.model
        assert agent is not None and model is not None
        budget = model.context_window * 2  # chars: about half the window in tokens
        text = transcript_for_summary(messages, budget)
        request = ChatRequest(
            system=SUMMARY_SYSTEM,
            messages=[Message("user", f"{text}\n\n---\n\n{SUMMARY_INSTRUCTIONS}")],
        )
        summary, _ = await agent.client.complete(request)
        return summary

"""How a native session behaves (`SessionConfig`): built once by the bridge from the settings
and the session's context, read by the session and its compactor."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.core.events import BaseEvent
from avatar.native.agent.compaction import CompactionStrategy, SummaryCompaction
from avatar.native.llm import make_client
from avatar.native.tools.base import AgentTool
from avatar.policy.permissions import PermissionHandler, deny_all

if TYPE_CHECKING:
    from avatar.core.config import Scope
    from avatar.native.llm.base import LLMClient, RetryNotice
    from avatar.native.models import ModelInfo, ModelResolver

ClientFactory = Callable[["ModelInfo", Mapping[str, str], "RetryNotice"], "LLMClient"]


def _default_client(model: ModelInfo, env: Mapping[str, str], notice: RetryNotice) -> LLMClient:

    return make_client(model, env, on_retry=notice)


@dataclass
class SessionConfig:
    """How a native session behaves; built once by the bridge from settings and context."""

    cwd: Path
    scope: Scope
    env: Mapping[str, str]
    resolver: ModelResolver
    permission: PermissionHandler = deny_all
    additional_dirs: Sequence[Path] = ()
    prompt_additions: Sequence[str] = ()
    compaction: CompactionStrategy = field(default_factory=SummaryCompaction)
    auto_compact: bool = True
    compact_threshold: float = 0.8
    keep_recent_tokens: int | None = None  # default: a quarter of the window, ≤ 20k
    client_factory: ClientFactory = _default_client
    tools: Sequence[AgentTool] | None = None
    preset: str | None = None
    outside_turn: Callable[[BaseEvent], None] = lambda event: None

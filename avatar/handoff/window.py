"""How much of the target model's context window a handoff may fill, in estimated tokens."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from avatar.core.errors import UsageError

if TYPE_CHECKING:
    from avatar.core.config import Settings

#: The share of the target's window a handoff may take (config `handoff_share` overrides).
DEFAULT_SHARE = 0.25
#: The window assumed when nothing says otherwise (the smallest common one of today's models).
DEFAULT_WINDOW = 128_000
# What each agent CLI runs by default when no model is named (its vendor's current models).
_AGENT_WINDOW = {
    "claude": 200_000,
    "claude-acp": 200_000,
    "codex": 272_000,
    "gemini": 1_048_576,
}
_CHARS_PER_TOKEN = 4  # the usual estimate for English text and code


def estimate_tokens(text: str) -> int:
    """Tokens `text` takes, estimated from its length (no tokenizer needed)."""
    return (len(text) + _CHARS_PER_TOKEN - 1) // _CHARS_PER_TOKEN


def context_window(
    provider: str, model: str | None, settings: Settings | None, env: Mapping[str, str]
) -> int:
    """The context window of `model` on `provider`: the model registry's figure (built-in
    catalog and config `models:`), else the agent's default model's, else DEFAULT_WINDOW."""
    from avatar.native.models import ModelRegistry, ModelResolver

    if provider == "native":
        try:
            resolver: ModelResolver = ModelResolver.from_settings(settings, env)
            return resolver.resolve(model).context_window
        except UsageError:
            return DEFAULT_WINDOW
    if model:
        found = ModelRegistry.from_settings(settings).candidates(model)
        if found:
            return found[0].context_window
    return _AGENT_WINDOW.get(provider, DEFAULT_WINDOW)


def handoff_budget(window: int, share: float | None = None) -> int:
    """The tokens a handoff may take in a window of `window` tokens."""
    return max(1_000, int(window * (share if share is not None else DEFAULT_SHARE)))

"""The native model registry and resolver (docs/design.md §5), and the credential check.

`ModelRegistry` = a small built-in catalog + the config's `models:`; `ModelResolver` turns
what the user typed (`-m`, preset, provider config, `default_model`) into one `ModelInfo`
with its endpoint and key variable. Keys are read from the environment when a client is
built and never stored in a session file.
"""

from __future__ import annotations

import difflib
import os
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from avatar.core.errors import UsageError

if TYPE_CHECKING:
    from avatar.core.config import ModelConfig, Settings

Api = Literal["openai", "anthropic"]

OPENAI_URL = "https://api.openai.com/v1"
ANTHROPIC_URL = "https://api.anthropic.com"
OLLAMA_URL = "http://localhost:11434/v1"
OPENROUTER_URL = "https://openrouter.ai/api/v1"


@dataclass(frozen=True)
class ProviderInfo:
    """An LLM vendor or server kind a model belongs to."""

    name: str
    api: Api
    base_url: str
    api_key_env: str | None  # None: no key needed (local servers)
    base_url_env: str | None = None


PROVIDERS: dict[str, ProviderInfo] = {
    p.name: p
    for p in (
        ProviderInfo("openai", "openai", OPENAI_URL, "OPENAI_API_KEY", "OPENAI_BASE_URL"),
        ProviderInfo(
            "anthropic", "anthropic", ANTHROPIC_URL, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"
        ),
        ProviderInfo("openrouter", "openai", OPENROUTER_URL, "OPENROUTER_API_KEY"),
        ProviderInfo("ollama", "openai", OLLAMA_URL, None),
    )
}


@dataclass(frozen=True)
class ModelInfo:
    """One model: where it is served, how big its context is, what it costs."""

    id: str
    provider: str
    api: Api
    base_url: str | None = None  # None: the provider's (or its *_BASE_URL variable's)
    api_key_env: str | None = None  # None: the provider's
    context_window: int = 128_000
    max_output: int | None = None
    cost_input: float = 0.0  # USD per million tokens
    cost_output: float = 0.0
    cost_cache_read: float | None = None
    cost_cache_write: float | None = None
    builtin: bool = True

    @property
    def full_id(self) -> str:
        """`provider/id`."""
        return f"{self.provider}/{self.id}"

    def endpoint(self, env: Mapping[str, str]) -> str:
        """The base URL requests go to (config, else `*_BASE_URL`, else the vendor's)."""
        if self.base_url:
            return self.base_url.rstrip("/")
        info = PROVIDERS.get(self.provider)
        if info is None:
            return OPENAI_URL if self.api == "openai" else ANTHROPIC_URL
        if info.base_url_env and env.get(info.base_url_env):
            return env[info.base_url_env].rstrip("/")
        return info.base_url

    def key_env(self) -> str | None:
        """The environment variable holding this model's API key, if it needs one."""
        if self.api_key_env:
            return self.api_key_env
        info = PROVIDERS.get(self.provider)
        if info is not None:
            return info.api_key_env
        return "OPENAI_API_KEY" if self.api == "openai" else "ANTHROPIC_API_KEY"

    def api_key(self, env: Mapping[str, str]) -> str | None:
        """The API key from `env`, or None."""
        name = self.key_env()
        return env.get(name) or None if name else None

    def cost(
        self, input_tokens: int, output_tokens: int, cache_read: int, cache_write: int
    ) -> float:
        """USD for one call (`input_tokens` excludes cache reads and writes)."""
        read = self.cost_cache_read if self.cost_cache_read is not None else self.cost_input
        write = self.cost_cache_write if self.cost_cache_write is not None else self.cost_input
        return (
            input_tokens * self.cost_input
            + output_tokens * self.cost_output
            + cache_read * read
            + cache_write * write
        ) / 1_000_000


def _m(
    provider: str,
    id: str,
    context: int,
    max_out: int,
    cin: float,
    cout: float,
    cread: float | None = None,
    cwrite: float | None = None,
) -> ModelInfo:
    api = PROVIDERS[provider].api
    return ModelInfo(id, provider, api, None, None, context, max_out, cin, cout, cread, cwrite)


# Prices in USD per million tokens (input, output, cache read, cache write), as published by
# the vendors; `models:` in config overrides or extends them.
BUILTIN_MODELS: tuple[ModelInfo, ...] = (
    _m("openai", "gpt-4o", 128_000, 16_384, 2.5, 10, 1.25),
    _m("openai", "gpt-4o-mini", 128_000, 16_384, 0.15, 0.6, 0.075),
    _m("openai", "gpt-4.1", 1_047_576, 32_768, 2, 8, 0.5),
    _m("openai", "gpt-4.1-mini", 1_047_576, 32_768, 0.4, 1.6, 0.1),
    _m("openai", "gpt-4.1-nano", 1_047_576, 32_768, 0.1, 0.4, 0.025),
    _m("openai", "o3", 200_000, 100_000, 2, 8, 0.5),
    _m("openai", "o4-mini", 200_000, 100_000, 1.1, 4.4, 0.275),
    _m("openai", "gpt-5", 400_000, 128_000, 1.25, 10, 0.125),
    _m("openai", "gpt-5-mini", 400_000, 128_000, 0.25, 2, 0.025),
    _m("openai", "gpt-5-nano", 400_000, 128_000, 0.05, 0.4, 0.005),
    _m("anthropic", "claude-opus-4-1", 200_000, 32_000, 15, 75, 1.5, 18.75),
    _m("anthropic", "claude-opus-4-0", 200_000, 32_000, 15, 75, 1.5, 18.75),
    _m("anthropic", "claude-sonnet-4-5", 200_000, 64_000, 3, 15, 0.3, 3.75),
    _m("anthropic", "claude-sonnet-4-0", 200_000, 64_000, 3, 15, 0.3, 3.75),
    _m("anthropic", "claude-haiku-4-5", 200_000, 64_000, 1, 5, 0.1, 1.25),
    _m("anthropic", "claude-3-5-haiku-latest", 200_000, 8_192, 0.8, 4, 0.08, 1),
    _m("openrouter", "anthropic/claude-sonnet-4.5", 200_000, 64_000, 3, 15, 0.3, 3.75),
    _m("openrouter", "openai/gpt-4o", 128_000, 16_384, 2.5, 10, 1.25),
    _m("ollama", "llama3.1", 128_000, 8_192, 0, 0),
    _m("ollama", "qwen2.5-coder", 32_768, 8_192, 0, 0),
)

DEFAULT_OPENAI = "gpt-4o"
DEFAULT_ANTHROPIC = "claude-sonnet-4-5"


def from_config(cfg: ModelConfig) -> ModelInfo:
    """A `models:` entry as a `ModelInfo`."""
    provider = cfg.provider or ("anthropic" if cfg.api == "anthropic" else "openai")
    return ModelInfo(
        id=cfg.id,
        provider=provider,
        api=cfg.api,
        base_url=cfg.base_url,
        api_key_env=cfg.api_key_env,
        context_window=cfg.context_window,
        max_output=cfg.max_output,
        cost_input=cfg.cost.input,
        cost_output=cfg.cost.output,
        cost_cache_read=cfg.cost.cache_read,
        cost_cache_write=cfg.cost.cache_write,
        builtin=False,
    )


class ModelRegistry:
    """The models avatar knows: the built-in catalog, then config `models:` (which win)."""

    def __init__(self, extra: Iterable[ModelInfo] = ()) -> None:
        self._models: dict[str, ModelInfo] = {}
        for model in (*BUILTIN_MODELS, *extra):
            self._models[model.full_id] = model

    @classmethod
    def from_settings(cls, settings: Settings | None) -> ModelRegistry:
        """The catalog plus `settings.models`."""
        extra = [from_config(m) for m in settings.models] if settings is not None else []
        return cls(extra)

    def all(self) -> list[ModelInfo]:
        """Every model, config entries last."""
        return list(self._models.values())

    def key_variables(self) -> set[str]:
        """The environment variables holding the models' API keys (built-in and config)."""
        names = {p.api_key_env for p in PROVIDERS.values() if p.api_key_env}
        return names | {name for m in self.all() if (name := m.key_env())}

    def get(self, full_id: str) -> ModelInfo | None:
        """The model named exactly `provider/id`."""
        return self._models.get(full_id)

    def candidates(self, name: str) -> list[ModelInfo]:
        """Models whose id or `provider/id` is `name`, else starts with it."""
        name_l = name.lower()
        exact = [
            m
            for m in self._models.values()
            if m.id.lower() == name_l or m.full_id.lower() == name_l
        ]
        if exact:
            # A config entry shadows a built-in of the same id.
            custom = [m for m in exact if not m.builtin]
            return custom or exact
        return [
            m
            for m in self._models.values()
            if m.id.lower().startswith(name_l) or m.full_id.lower().startswith(name_l)
        ]

    def looks_known(self, name: str) -> bool:
        """True when `name` is close to a catalog id or shares a catalog family (`gpt-…`)."""
        ids = {m.id.lower() for m in self._models.values() if m.builtin}
        lowered = name.lower()
        if difflib.get_close_matches(lowered, ids, n=1, cutoff=0.75):
            return True
        family = lowered.split("-", 1)[0]
        return "-" in lowered and any(i.split("-", 1)[0] == family for i in ids)

    def near(self, name: str, n: int = 5) -> list[str]:
        """Known names that look like `name` (for error messages)."""
        names = sorted({m.id for m in self._models.values()} | set(self._models))
        close = difflib.get_close_matches(name, names, n=n, cutoff=0.5)
        if not close:
            stem = name.lower()[:3]
            close = [x for x in names if stem and stem in x.lower()][:n]
        return close


class ModelResolver:
    """Pick the model: explicit (CLI, preset, provider config) > `default_model` > built-in."""

    def __init__(
        self,
        registry: ModelRegistry,
        default_model: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.registry = registry
        self.default_model = default_model
        self.env = os.environ if env is None else env

    @classmethod
    def from_settings(
        cls, settings: Settings | None, env: Mapping[str, str] | None = None
    ) -> ModelResolver:
        """A resolver over `settings` (its `models:` and `default_model`)."""
        registry = ModelRegistry.from_settings(settings)
        default = settings.default_model if settings is not None else None
        return cls(registry, default, env)

    def builtin_default(self) -> str:
        """The built-in default: OpenAI's when it can be reached, else Anthropic's if keyed."""
        env = self.env
        if env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"):
            return DEFAULT_OPENAI
        if env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_BASE_URL"):
            return DEFAULT_ANTHROPIC
        return DEFAULT_OPENAI

    def resolve(self, name: str | None = None) -> ModelInfo:
        """The model `name` names (or the default); a `UsageError` listing near matches."""
        chosen = name or self.default_model or self.builtin_default()
        found = self.registry.candidates(chosen)
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            exact = [m for m in found if m.id == chosen or m.full_id == chosen]
            if len(exact) == 1:
                return exact[0]
            # One id offered by several providers: prefer the vendor's own.
            direct = [m for m in exact if m.provider in ("openai", "anthropic")]
            if len(direct) == 1:
                return direct[0]
            names = ", ".join(sorted(m.full_id for m in found)[:10])
            raise UsageError(f"model {chosen!r} is ambiguous: {names}")
        adhoc = self._adhoc(chosen) or self._on_base_url(chosen)
        if adhoc is not None:
            return adhoc
        near = self.registry.near(chosen)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise UsageError(
            f"unknown model {chosen!r}{hint} (use provider/id, e.g. openai/{chosen} or "
            f"ollama/{chosen}, or add it under `models:` in config)"
        )

    def _adhoc(self, name: str) -> ModelInfo | None:
        # `provider/anything` reaches models the catalog does not list (a new release, a
        # local server's model) without editing config.
        provider, sep, model_id = name.partition("/")
        info = PROVIDERS.get(provider)
        if not sep or info is None or not model_id:
            return None
        return ModelInfo(id=model_id, provider=provider, api=info.api, builtin=False)

    def _on_base_url(self, name: str) -> ModelInfo | None:
        # With `OPENAI_BASE_URL` set, the user runs an OpenAI-compatible server whose model
        # names the catalog cannot know (`my-model`, `org/model` on vLLM): send them there.
        # A name that looks like a catalog model (`gpt-4p`, `claude-sonet`) is a typo instead:
        # it stays a usage error naming the near matches.
        if not self.env.get("OPENAI_BASE_URL") or self.registry.looks_known(name):
            return None
        return ModelInfo(id=name, provider="openai", api="openai", builtin=False)


def ollama_running(host: str = "127.0.0.1", port: int = 11434, timeout: float = 0.2) -> bool:
    """True when something accepts TCP connections on Ollama's port (a 0.2 s probe)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def native_has_credentials(settings: Settings | None, env: Mapping[str, str]) -> bool:
    """Can the native provider talk to a model? (docs/design.md §3: choosing the default provider.)

    True with an API key for the resolved model's api, `OPENAI_BASE_URL` set, a configured
    model that needs no key, or an Ollama answering on localhost:11434.
    """
    if env.get("OPENAI_BASE_URL"):
        return True
    resolver = ModelResolver.from_settings(settings, env)
    name: str | None = None
    if settings is not None:
        native = settings.provider_config("native")
        name = (native.model if native else None) or settings.model
    try:
        model = resolver.resolve(name)
    except UsageError:
        model = None
    if model is not None:
        if model.provider == "ollama" and not model.base_url:
            return ollama_running()
        key_env = model.key_env()
        if key_env is None or model.api_key(env):
            return True
        if not model.builtin and model.base_url and not model.api_key_env:
            return True  # a configured local endpoint without a key variable
        if model.api == "anthropic" and env.get("ANTHROPIC_BASE_URL"):
            return True
    else:
        if env.get("OPENAI_API_KEY") or env.get("ANTHROPIC_API_KEY"):
            return True
    return ollama_running()


def ollama_models(base_url: str = "http://127.0.0.1:11434", timeout: float = 1.0) -> list[str]:
    """Model names an Ollama server has pulled (empty when it does not answer)."""
    import json
    import urllib.request

    try:
        with urllib.request.urlopen(f"{base_url}/api/tags", timeout=timeout) as resp:
            data = json.load(resp)
    except (OSError, ValueError):
        return []
    return [m["name"] for m in data.get("models", []) if isinstance(m, dict) and m.get("name")]


def with_context_window(model: ModelInfo, tokens: int) -> ModelInfo:
    """A copy of `model` with another context window (tests, small local models)."""
    return replace(model, context_window=tokens)

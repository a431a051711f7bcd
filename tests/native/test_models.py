"""ModelRegistry, ModelResolver, endpoints, keys, and the credential check."""

from __future__ import annotations

import socket

import pytest

from avatar.core.config import ModelConfig, ModelCost, ProviderConfig, Settings, parse_settings
from avatar.core.errors import UsageError
from avatar.native import models
from avatar.native.models import ModelRegistry, ModelResolver, native_has_credentials


def resolver(settings: Settings | None = None, env: dict[str, str] | None = None) -> ModelResolver:
    return ModelResolver.from_settings(settings, env or {})


def test_priority_cli_then_default_model_then_builtin() -> None:
    s = Settings(default_model="gpt-4.1")
    assert resolver(s).resolve("claude-opus-4-1").id == "claude-opus-4-1"
    assert resolver(s).resolve(None).id == "gpt-4.1"
    assert resolver(None, {"OPENAI_API_KEY": "k"}).resolve(None).id == "gpt-4o"
    assert resolver(None, {"ANTHROPIC_API_KEY": "k"}).resolve(None).id == "claude-sonnet-4-5"


def test_provider_slash_id_prefixes_and_exact_wins() -> None:
    r = resolver()
    assert r.resolve("anthropic/claude-haiku-4-5").api == "anthropic"
    assert r.resolve("claude-haiku").id == "claude-haiku-4-5"  # unique prefix
    assert r.resolve("gpt-4.1").id == "gpt-4.1"  # exact, though gpt-4.1-mini shares the prefix
    assert r.resolve("openai/gpt-4o").provider == "openai"  # not openrouter's openai/gpt-4o id
    with pytest.raises(UsageError, match="ambiguous"):
        r.resolve("gpt-4.1-")


def test_unknown_model_lists_near_matches() -> None:
    with pytest.raises(UsageError) as info:
        resolver().resolve("gpt-4p")
    message = str(info.value)
    assert "unknown model 'gpt-4p'" in message and "gpt-4o" in message
    assert "models:" in message


def test_adhoc_provider_models() -> None:
    m = resolver().resolve("ollama/qwen3:8b")
    assert (m.id, m.provider, m.api) == ("qwen3:8b", "ollama", "openai")
    assert m.endpoint({}) == "http://localhost:11434/v1" and m.key_env() is None
    assert resolver().resolve("openrouter/x/y").endpoint({}) == "https://openrouter.ai/api/v1"


def test_config_models_extend_and_override() -> None:
    s = Settings(
        models=[
            ModelConfig(
                id="local-llama",
                base_url="http://localhost:8080/v1",
                api_key_env="MY_KEY",
                context_window=32768,
                cost=ModelCost(input=1, output=2),
            ),
            ModelConfig(id="gpt-4o", context_window=1000),
        ]
    )
    r = resolver(s, {"MY_KEY": "secret"})
    m = r.resolve("local-llama")
    assert m.endpoint({}) == "http://localhost:8080/v1" and m.api_key({"MY_KEY": "s"}) == "s"
    assert m.context_window == 32768 and m.cost(1_000_000, 1_000_000, 0, 0) == 3
    assert r.resolve("gpt-4o").context_window == 1000


def test_base_url_env_and_keys() -> None:
    gpt = resolver().resolve("gpt-4o")
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1/", "OPENAI_API_KEY": "k1"}
    assert gpt.endpoint(env) == "http://127.0.0.1:9/v1" and gpt.api_key(env) == "k1"
    claude = resolver().resolve("claude-sonnet-4-5")
    env = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": "k2"}
    assert claude.endpoint(env) == "http://127.0.0.1:9" and claude.api_key(env) == "k2"
    assert claude.endpoint({}) == "https://api.anthropic.com"


def test_cost_uses_cache_prices() -> None:
    claude = ModelRegistry().get("anthropic/claude-sonnet-4-5")
    assert claude is not None
    assert claude.cost(1_000_000, 0, 1_000_000, 1_000_000) == pytest.approx(3 + 0.3 + 3.75)


def test_native_has_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "ollama_running", lambda *a, **k: False)
    assert not native_has_credentials(Settings(), {})
    assert native_has_credentials(Settings(), {"OPENAI_API_KEY": "k"})
    assert native_has_credentials(Settings(), {"OPENAI_BASE_URL": "http://x/v1"})
    assert native_has_credentials(Settings(), {"ANTHROPIC_API_KEY": "k"})
    claude = Settings(providers={"native": ProviderConfig(model="claude-sonnet-4-5")})
    assert not native_has_credentials(claude, {"OPENAI_API_KEY": "k"})
    assert native_has_credentials(claude, {"ANTHROPIC_API_KEY": "k"})
    keyed = Settings(default_model="m", models=[ModelConfig(id="m", api_key_env="MKEY")])
    assert native_has_credentials(keyed, {"MKEY": "x"}) and not native_has_credentials(keyed, {})
    local = Settings(default_model="l", models=[ModelConfig(id="l", base_url="http://h:1/v1")])
    assert native_has_credentials(local, {})
    monkeypatch.setattr(models, "ollama_running", lambda *a, **k: True)
    assert native_has_credentials(Settings(), {})


def test_ollama_probe_is_real() -> None:
    assert not models.ollama_running(port=_free_port())  # nobody listens there
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        assert models.ollama_running(port=srv.getsockname()[1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_native_example_config_loads() -> None:
    from pathlib import Path

    from avatar.core.config import load_file

    path = Path(__file__).resolve().parents[2] / "examples" / "native-local-models.yaml"
    settings = parse_settings(load_file(path))
    r = ModelResolver.from_settings(settings, {})
    assert r.resolve(None).full_id == "openai/qwen-local"
    assert r.resolve("claude-via-gateway").api == "anthropic"

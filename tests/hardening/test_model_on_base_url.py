"""The README example: with `OPENAI_BASE_URL` set, a bare unknown model id goes to that server."""

from __future__ import annotations

from pathlib import Path

import pytest

from avatar.core.errors import UsageError
from avatar.native.models import ModelRegistry, ModelResolver
from tests.support.drive import avatar
from tests.support.homes import AgentHome
from tests.support.model_server import FakeModelServer, Reply


def test_readme_example_reaches_the_base_url_server(
    avatar_env: dict[str, str], agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    out = avatar(avatar_env, agent_home.workdir, "-p", "native", "-m", "my-model", "chat", "hi")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Hello from the fake LLM."
    assert model_server.requests_for("chat")[0].model == "my-model"
    # The session remembers it, so a resume goes to the same server with the same id.
    again = avatar(avatar_env, agent_home.workdir, "-p", "native", "chat", "--continue", "more")
    assert again.returncode == 0, again.stderr
    assert model_server.requests_for("chat")[-1].model == "my-model"


@pytest.mark.parametrize("name", ["my-model", "meta-llama/Llama-3.1-8B"])
def test_unknown_ids_resolve_to_openai_on_the_base_url(name: str) -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    model = ModelResolver(ModelRegistry(), env=env).resolve(name)
    assert (model.id, model.provider, model.api) == (name, "openai", "openai")
    assert model.endpoint(env).startswith("http://127.0.0.1:9/v1")


def test_catalog_models_and_provider_prefixes_still_win() -> None:
    resolver = ModelResolver(ModelRegistry(), env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert resolver.resolve("gpt-4o").full_id == "openai/gpt-4o"
    assert resolver.resolve("ollama/llama3").provider == "ollama"


def test_without_a_base_url_an_unknown_id_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown model 'my-model'"):
        ModelResolver(ModelRegistry(), env={}).resolve("my-model")


@pytest.mark.parametrize("typo", ["gpt-4p", "gpt-9000", "claude-sonet-4"])
def test_a_near_miss_of_a_catalog_model_stays_a_usage_error(typo: str) -> None:
    resolver = ModelResolver(ModelRegistry(), env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    with pytest.raises(UsageError, match=f"unknown model '{typo}'"):
        resolver.resolve(typo)


PASSWORD = "Pa55-in-the-URL-7c1e"


def _with_password(url: str) -> str:
    return url.replace("http://", f"http://proxyuser:{PASSWORD}@", 1)


def test_a_password_in_the_base_url_is_in_no_notice_or_error(
    avatar_env: dict[str, str], agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    """`OPENAI_BASE_URL=http://user:PASSWORD@host/v1` (a proxy's login): the retry notices,
    the error that ends the turn and a connection error name the server without it, in what
    is printed and in avatar's records of the session (issue 30)."""
    env = {**avatar_env, "OPENAI_BASE_URL": _with_password(model_server.openai_base_url)}
    cwd = agent_home.workdir
    model_server.chat.append(*[Reply.error(503, "overloaded", retry_after=0.01)] * 2)
    model_server.chat.append(Reply.error(400, "bad request"))
    failed = avatar(env, cwd, "-p", "native", "-m", "my-model", "chat", "hi")
    assert failed.returncode == 1
    assert "retrying in" in failed.stderr and "HTTP 400" in failed.stderr  # (said, without it)
    closed = {**env, "OPENAI_BASE_URL": f"http://proxyuser:{PASSWORD}@127.0.0.1:9/v1"}
    refused = avatar(closed, cwd, "-p", "native", "-m", "my-model", "chat", "hi", timeout=120)
    assert refused.returncode == 1 and "127.0.0.1:9" in refused.stderr
    for out in (failed, refused):
        assert PASSWORD not in out.stdout + out.stderr
    # (bytes: the rewind store beside the sessions holds git's binary index)
    records = [p.read_bytes() for p in Path(env["AVATAR_HOME"]).rglob("*") if p.is_file()]
    assert records and not [data for data in records if PASSWORD.encode() in data]

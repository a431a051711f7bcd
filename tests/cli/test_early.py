"""A cold one-shot's agent starts before click loads (`avatar.cli.early`): the bare argv is read
for `avatar [global options] chat PROMPT` alone, as click reads it, and anything else is left
to click; the engine built then is the one the command runs on, and only when the command
asks for the options it was built from (tests/integration/test_launch_ahead.py drives it with
the real codex-acp)."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from avatar.cli.commands import cli
from avatar.cli.early import FLAGS, VALUED, one_shot_state
from avatar.cli.state import AppState, discard_prebuilt, prebuild
from avatar.core.errors import UsageError


def test_the_options_read_early_are_clicks_global_options() -> None:
    valued, flags = {}, {}
    for param in cli.params:
        if not isinstance(param, click.Option) or param.name == "version":
            continue
        table = flags if param.is_flag else valued
        table.update(dict.fromkeys(param.opts, param.name))
    assert valued == VALUED
    assert flags == FLAGS


def test_a_plain_session_list_is_session_list_with_its_defaults() -> None:
    import inspect

    from avatar.cli.sessions import list_sessions

    group = cli.commands["session"]
    assert isinstance(group, click.Group)
    listing = group.commands["list"]
    defaults = listing.make_context("list", []).params  # (what click reads without options)
    signature = inspect.signature(list_sessions).parameters
    for name in ("limit", "json_out", "any_cwd", "refresh", "tree"):
        assert signature[name].default == defaults[name], name


def test_the_plain_shapes_of_a_one_shot_chat_are_read(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    read = one_shot_state(
        ["-p", "codex", "--model", "m1", "--preset", "fast", "-C", str(tmp_path), "-c",
         str(config), "--trust", "chat", "say hello"]
    )  # fmt: skip
    assert read is not None
    assert (read.provider, read.model, read.preset) == ("codex", "m1", "fast")
    assert (read.cwd, read.config, read.trust) == (tmp_path.resolve(), config, True)
    bare = one_shot_state(["chat", "hi"])
    assert bare is not None and bare.provider is None and bare.cwd == Path.cwd().resolve()


@pytest.mark.parametrize(
    "args",
    [
        ["chat"],
        ["chat", "-"],
        ["chat", "  "],
        ["chat", "hi", "--json"],
        ["chat", "--json", "hi"],
        ["chat", "--", "hi"],
        ["chat", "look at @notes.md"],
        ["chat", "see /tmp/shot.png"],
        ["chat", "see ~/shot.png"],
        ["chat", "\udcff"],
        ["-p", "codex", "-p", "gemini", "chat", "hi"],
        ["-p", "-m", "chat", "hi"],
        ["--provider=codex", "chat", "hi"],
        ["-pcodex", "chat", "hi"],
        ["-p"],
        ["-C", "/no/such/dir", "chat", "hi"],
        ["-c", "/", "chat", "hi"],
        ["session", "list"],
        ["-h", "chat", "hi"],
        [],
    ],
)
def test_anything_else_is_left_to_click(args: list[str]) -> None:
    assert one_shot_state(args) is None


@pytest.fixture
def native_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AVATAR_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AVATAR_CONFIG", str(tmp_path / "none.yaml"))
    (tmp_path / "proj").mkdir()
    return tmp_path / "proj"


def test_the_command_runs_on_the_engine_built_early_from_the_same_options(
    native_home: Path,
) -> None:
    early = AppState(provider="native", cwd=native_home)
    prebuild(early)
    built = AppState(provider="native", cwd=native_home).engine()
    assert built.one_shot  # (the early one: made for a one-shot)
    assert AppState(provider="native", cwd=native_home).engine() is not built  # (taken once)


@pytest.mark.parametrize(
    "asked",
    [
        {"provider": "codex"},
        {"provider": "native", "model": "other"},
        {"provider": "native", "trust": True},
    ],
)
def test_a_command_asking_for_other_options_gets_an_engine_of_its_own(
    native_home: Path, asked: dict[str, object]
) -> None:
    prebuild(AppState(provider="native", cwd=native_home))
    built = AppState(cwd=native_home, **asked).engine()  # type: ignore[arg-type]
    assert not built.one_shot
    assert AppState(provider="native", cwd=native_home).engine().one_shot is False


def test_flags_of_the_command_itself_get_an_engine_of_their_own(native_home: Path) -> None:
    prebuild(AppState(provider="native", cwd=native_home))
    assert not AppState(provider="native", cwd=native_home).engine(permission="allow").one_shot
    assert not AppState(provider="native", cwd=native_home).engine().one_shot  # (stopped)


def test_an_engine_no_command_took_is_discarded(native_home: Path) -> None:
    prebuild(AppState(provider="native", cwd=native_home))
    discard_prebuilt()
    assert not AppState(provider="native", cwd=native_home).engine().one_shot


def test_an_engine_that_cannot_be_built_early_is_left_to_the_command(native_home: Path) -> None:
    prebuild(AppState(provider="no-such-provider", cwd=native_home))
    with pytest.raises(UsageError, match="no-such-provider"):
        AppState(provider="no-such-provider", cwd=native_home).engine()

"""What of the environment changes an agent (`avatar.providers.variables`): the variables its
provider declares and those every agent reads, never a terminal's."""

from __future__ import annotations

from avatar.providers.registry import shipped
from avatar.providers.variables import agent_environment

TERMINAL = {"COLUMNS": "80", "LINES": "24", "TERM": "xterm", "PS1": "$ ", "OLDPWD": "/tmp"}


def test_each_agent_is_keyed_on_what_it_declares_and_what_every_agent_reads() -> None:
    env = {
        **TERMINAL,
        "PATH": "/bin",
        "HOME": "/home/u",
        "LC_ALL": "C",
        "HTTPS_PROXY": "http://proxy",
        "CODEX_HOME": "/c",
        "OPENAI_BASE_URL": "http://o",
        "ANTHROPIC_BASE_URL": "http://a",
        "CLAUDE_CONFIG_DIR": "/cc",
        "GEMINI_API_KEY": "g",
        "GEMINI_CLI_HOME": "/g",
        "INITIAL_AGENT_MODE": "x",
    }
    common = {"PATH", "HOME", "LC_ALL", "HTTPS_PROXY"}
    specs = shipped()
    assert set(agent_environment(specs["codex"], env)) == common | {
        "CODEX_HOME",
        "OPENAI_BASE_URL",
        "INITIAL_AGENT_MODE",  # (its mode_env)
    }
    for claude in ("claude", "claude-acp"):
        assert set(agent_environment(specs[claude], env)) == common | {
            "ANTHROPIC_BASE_URL",
            "CLAUDE_CONFIG_DIR",
        }
    assert set(agent_environment(specs["gemini"], env)) == common | {
        "GEMINI_API_KEY",
        "GEMINI_CLI_HOME",
    }
    # An agent in avatar's own process reads what it likes: all of it counts.
    assert agent_environment(specs["native"], env) == env

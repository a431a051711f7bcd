"""What an ACP session of avatar offers as menus: its config options `provider` (every agent
avatar can run here) and `model` (category `model`), and its modes — the REPL's permission
modes (ask, accept edits, plan where the agent has one; `avatar.cli.repl.menu`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from avatar.cli.repl import menu
from avatar.providers.programs import find_executable

if TYPE_CHECKING:
    from avatar.engine.engine import Engine

#: The value of the model menu that leaves the choice to the agent.
AGENT_DEFAULT = "default"


def providers(engine: Engine) -> list[str]:
    """The providers that can run here, in the table's order: the native agent, and every
    agent whose program is found."""
    names = []
    for spec in engine.registry.specs():
        if spec.transport == "native":
            names.append(spec.name)
            continue
        path = engine.registry.env_for(spec).get("PATH")
        if spec.executable and find_executable(spec.executable, path):
            names.append(spec.name)
    return names


def _choice(value: str, name: str | None = None) -> dict[str, str]:
    return {"value": value, "name": name or value}


def config_options(engine: Engine, found: list[str]) -> list[dict[str, Any]]:
    """The session's config options as they stand: the provider it runs on (`found`: those
    offered) and its model."""
    status = engine.status()
    provider = status.provider or engine.chosen_provider()
    offered = found if provider in found else [provider, *found]
    model = status.model or engine.model
    models = engine.registry.models(provider, engine.settings)
    values = [_choice(AGENT_DEFAULT, f"{provider}'s own")]
    values += [_choice(m) for m in ([model] if model and model not in models else []) + models]
    return [
        {
            "id": "provider",
            "name": "Agent",
            "description": "The coding agent avatar runs this session on; changing it hands "
            "the conversation over to the new one.",
            "category": "_provider",
            "type": "select",
            "currentValue": provider,
            "options": [_choice(name) for name in offered],
        },
        {
            "id": "model",
            "name": "Model",
            "description": "The model of the agent this session runs on.",
            "category": "model",
            "type": "select",
            "currentValue": model or AGENT_DEFAULT,
            "options": values,
        },
    ]


def modes(current: str, can_plan: bool) -> dict[str, Any]:
    """The session's modes: avatar's permission modes (plan where the agent has one)."""
    offered = [m for m in menu.MODES if m != menu.PLAN or can_plan]
    return {
        "currentModeId": mode_id(current),
        "availableModes": [
            {"id": mode_id(m), "name": m.capitalize(), "description": menu.MODE_HELP[m]}
            for m in offered
        ],
    }


def mode_id(mode: str) -> str:
    """A mode's id on the wire (`accept edits` → `accept-edits`)."""
    return mode.replace(" ", "-")


def mode_named(mode_id_: str) -> str | None:
    """The mode an id names, or None."""
    mode = mode_id_.replace("-", " ")
    return mode if mode in menu.MODES else None

"""What a prompt carries to an ACP agent: its content blocks (text, then images), and whether
the agent takes images at all (`promptCapabilities.image` at initialize)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from avatar.bridges.acp.permission import get

if TYPE_CHECKING:
    from avatar.core.prompts import Prompt


def takes_images(agent_capabilities: Any) -> bool:
    """True when the agent said at initialize that it accepts image content."""
    if agent_capabilities is None:
        return False
    prompt = get(agent_capabilities, "prompt_capabilities", "promptCapabilities")
    return bool(prompt is not None and get(prompt, "image"))


def prompt_blocks(prompt: Prompt) -> list[dict[str, Any]]:
    """`session/prompt`'s content: a text block, then an image block per image (base64)."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": prompt.text}]
    blocks += [{"type": "image", "mimeType": i.mime, "data": i.base64} for i in prompt.images]
    return blocks

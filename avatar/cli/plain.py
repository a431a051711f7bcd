"""The plainest one-shot, `avatar [-p NAME] chat PROMPT`, read from the bare argv before
anything else loads (`avatar.cli.early`, and the claude started from memory:
`avatar.bridges.claude.remembered`)."""

from __future__ import annotations

#: Characters a prompt that mentions a file or pastes an image path holds (`@path`, `/…`,
#: `~/…`): its mentions are read before any agent starts (a bad image fails first).
MENTIONING = frozenset("@/~")


def plain_prompt(prompt: str) -> bool:
    """Is `prompt` one click would read as the same text, mentioning no file?"""
    if prompt.startswith("-") or not prompt.strip() or MENTIONING & set(prompt):
        return False
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def asked_provider(args: list[str]) -> str | None:
    """For `avatar [-p NAME | --provider NAME] chat PROMPT` (nothing else), the provider asked
    for ("" for none); None for any other command line."""
    if len(args) == 4 and args[0] in ("-p", "--provider") and not args[1].startswith("-"):
        asked, words = args[1], args[2:]
    else:
        asked, words = "", args
    if len(words) == 2 and words[0] == "chat" and plain_prompt(words[1]):
        return asked
    return None

"""The keys of the REPL's daily tools: Ctrl-G (the prompt in `$VISUAL`/`$EDITOR`), a paste
(folded into `[pasted N lines]` past ten lines; an image's `data:` address attached),
Ctrl-V (an image from the system clipboard), Backspace after a placeholder (it goes whole),
Ctrl-O (the transcript in a pager), and `y`/`n` when a `!command`'s output is offered for
the next prompt. The REPL's other keys: `avatar.cli.repl.keys`."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from prompt_toolkit.filters import Condition
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys

from avatar.cli.repl import menu
from avatar.cli.repl.paste import image_of_bytes, image_of_data_url, normalised
from avatar.core.errors import AvatarError

if TYPE_CHECKING:
    from prompt_toolkit.buffer import Buffer

    from avatar.cli.repl.host import ReplHost


def tool_bindings(repl: ReplHost) -> KeyBindings:
    """The keys of the module docstring, for `repl`'s input line."""
    bindings = KeyBindings()
    pastes = repl.pastes
    asking = Condition(lambda: repl.asking.pending is not None)
    offered = Condition(lambda: repl.shell.offered is not None)

    def say(text: str, style: str | None = "dim") -> None:
        from prompt_toolkit.application import run_in_terminal

        run_in_terminal(lambda: repl.say(text, style))

    @bindings.add(Keys.BracketedPaste)
    def _paste(event: KeyPressEvent) -> None:
        data = normalised(event.data)
        buffer = event.current_buffer
        try:
            image = image_of_data_url(data, "pasted")
        except AvatarError as e:
            say(f"avatar: {e}", "red")
            return
        buffer.insert_text(pastes.image(image) if image else pastes.fold(data))

    @bindings.add("c-v")
    def _clipboard(event: KeyPressEvent) -> None:
        from avatar.cli.repl.clipboard import clipboard_image

        buffer = event.current_buffer

        async def take() -> None:
            try:
                data = await asyncio.get_running_loop().run_in_executor(
                    None, clipboard_image, repl.engine.user_program
                )
                buffer.insert_text(pastes.image(image_of_bytes(data, "clipboard")))
            except AvatarError as e:
                say(f"avatar: {e}", "red")

        repl.keep(asyncio.ensure_future(take()))

    @bindings.add("c-g")
    def _editor(event: KeyPressEvent) -> None:
        repl.keep(asyncio.ensure_future(_edit(repl, event.current_buffer)))

    placeholder = Condition(lambda: _placeholder_before(repl) is not None)

    @bindings.add("backspace", filter=placeholder)
    def _unpaste(event: KeyPressEvent) -> None:
        found = _placeholder_before(repl)
        if found is not None:
            event.current_buffer.delete_before_cursor(len(found))

    @bindings.add("c-o")
    def _transcript(event: KeyPressEvent) -> None:
        from prompt_toolkit.application import run_in_terminal

        run_in_terminal(repl.show_transcript)

    for key in ("y", "n"):

        @bindings.add(key, filter=offered & ~asking & Condition(lambda: not _buffer().text))
        def _offer(event: KeyPressEvent, key: str = key) -> None:
            # Typed as text; it answers alone once nothing follows it for a moment (a prompt
            # that starts with `n` is a prompt).
            buffer = event.current_buffer
            buffer.insert_text(key)

            def settle() -> None:
                if buffer.text == key and repl.shell.offered is not None:
                    buffer.reset()
                    from prompt_toolkit.application import run_in_terminal

                    run_in_terminal(lambda: repl.shell.answer(key == "y"))

            asyncio.get_running_loop().call_later(menu.SETTLE, settle)

    return bindings


def _buffer() -> Buffer:
    from prompt_toolkit.application.current import get_app

    return get_app().current_buffer


def _placeholder_before(repl: ReplHost) -> str | None:
    buffer = _buffer()
    return repl.pastes.placeholder_before(buffer.document.text_before_cursor)


async def _edit(repl: ReplHost, buffer: Buffer) -> None:
    """Ctrl-G: the box's text (pastes in full) in the editor, and back (pastes folded)."""
    from prompt_toolkit.application import run_in_terminal
    from prompt_toolkit.document import Document

    from avatar.cli.repl.editor import edit_text

    pastes = repl.pastes

    def edit() -> str | None:
        with repl.notifier.handed_over():
            return edit_text(pastes.expand(buffer.text), repl.engine.user_program)

    try:
        edited = await run_in_terminal(edit, in_executor=True)
    except AvatarError as e:
        said = f"avatar: {e}"
        await run_in_terminal(lambda: repl.say(said, "red"))
        return
    if edited is None:
        await run_in_terminal(lambda: repl.say("(the editor failed: the prompt is as it was)"))
        return
    text = pastes.refold(edited)
    buffer.document = Document(text, len(text))

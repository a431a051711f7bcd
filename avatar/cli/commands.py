"""The `avatar` command line (docs/design.md §3). Renders events; knows nothing of vendors."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn, cast

import click

from avatar.cli.failing import run_command
from avatar.cli.state import AppState
from avatar.core.errors import UsageError, utf8_text
from avatar.core.version import __version__

PERMISSIONS = click.Choice(["ask", "allow", "deny"])
ADD_DIR = click.option(
    "--add-dir",
    "add_dirs",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Another directory the agent may read and write (repeatable).",
)
WORKTREE = click.option(
    "--worktree",
    metavar="[NAME]",
    is_flag=False,
    flag_value="",
    help="Run the new session in a new git worktree of its own (without NAME, one is made up:"
    " then give the option after the prompt).",
)


def run(args: list[str]) -> NoReturn:
    """Run the CLI with avatar's error contract: one stderr line, exit 2 usage / 1 provider."""
    run_command(lambda: cli.main(args, prog_name="avatar", standalone_mode=False))


class _Group(click.Group):
    """A group whose `--help` lists commands in the order of docs/design.md §3. Its `lazy` commands
    (name: "module:attribute") are imported only when asked for, not at every start-up."""

    lazy: dict[str, str]

    def list_commands(self, ctx: click.Context) -> list[str]:
        lazy = getattr(self, "lazy", {})
        return [*self.commands, *(name for name in lazy if name not in self.commands)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = getattr(self, "lazy", {}).get(cmd_name)
        if where is not None and cmd_name not in self.commands:
            import importlib

            module, _, attribute = where.partition(":")
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(
    cls=_Group,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "-p",
    "--provider",
    help="Provider to use: native, claude, claude-acp, codex, gemini, or a configured ACP agent.",
)
@click.option(
    "-m", "--model", help="Model for the provider (native: an id, provider/id or unique prefix)."
)
@click.option("--preset", help="Named bundle of settings from config `presets:`.")
@click.option(
    "-C", "cwd", type=click.Path(file_okay=False, path_type=Path), help="Run as if started in DIR."
)
@click.option(
    "-c",
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Config file to use instead of the user config.",
)
@click.option(
    "--trust",
    is_flag=True,
    help="Apply the project's .avatar.yaml whole for this run.",
)
@click.version_option(__version__, "--version", prog_name="avatar", message="%(prog)s %(version)s")
@click.pass_context
def cli(
    ctx: click.Context,
    provider: str | None,
    model: str | None,
    preset: str | None,
    cwd: Path | None,
    config: Path | None,
    trust: bool,
) -> int | None:
    """One terminal for every coding agent: Claude Code, Codex, Gemini CLI, any ACP agent, and a
    built-in native agent. Without a command, starts the REPL."""
    if cwd is not None and not cwd.is_dir():
        raise UsageError(f"no such directory: {cwd}")
    ctx.obj = AppState(
        provider=provider,
        model=model,
        preset=preset,
        cwd=(cwd or Path.cwd()).resolve(),
        config=config,
        trust=trust,
    )
    if ctx.invoked_subcommand is None:
        from avatar.cli.repl.start import run_repl

        return run_repl(ctx.obj, resume=None, cont=False, source=None, permission=None, add_dirs=())
    return None


def no_empty_ids(*flags: tuple[str, str | None]) -> None:
    """A usage error for a session flag given an empty id (`--resume "$UNSET"`): it would
    otherwise be taken as no flag at all and quietly open a new session."""
    for flag, value in flags:
        if value is not None and not value.strip():
            raise UsageError(f"{flag}: the session id is empty")


def no_worktree_with(worktree: str | None, *flags: tuple[str, object]) -> None:
    """A usage error for `--worktree` with a flag reopening a session: a session resumes in
    the worktree it ran in, and a new worktree has no session to continue."""
    for flag, value in flags:
        if worktree is not None and value:
            raise UsageError(f"--worktree opens a new session: it cannot go with {flag}")


@cli.command()
@click.argument("prompt", required=False)
@click.option("--resume", "resume", metavar="ID", help="Resume a session (id or unique prefix).")
@click.option(
    "--continue", "cont", is_flag=True, help="Continue the newest session in this directory."
)
@click.option("--json", "json_out", is_flag=True, help="Write one JSON event per line to stdout.")
@click.option(
    "--permission",
    type=PERMISSIONS,
    help="Answer to actions that change things (config default: ask, which denies here).",
)
@click.option(
    "-s",
    "--session-id",
    metavar="ID",
    help="Use this session id (resumed if it exists, else created where the provider allows).",
)
@click.option(
    "--from", "source", metavar="SESSION", help="Start seeded with a handoff of another session."
)
@click.option(
    "--no-wait",
    "no_wait",
    is_flag=True,
    help="Fail at once if another process has the session open (default: wait for it).",
)
@ADD_DIR
@WORKTREE
@click.pass_obj
def chat(
    state: AppState,
    prompt: str | None,
    resume: str | None,
    cont: bool,
    json_out: bool,
    permission: str | None,
    session_id: str | None,
    source: str | None,
    no_wait: bool,
    add_dirs: tuple[Path, ...],
    worktree: str | None,
) -> int:
    """Send one prompt (or `-` to read it from stdin) and stream the answer."""
    if prompt is None or prompt == "-":
        if prompt is None and sys.stdin.isatty():
            raise UsageError("chat needs a prompt (or `-` to read it from stdin)")
        data = sys.stdin.buffer.read()
        prompt = data.decode("utf-8", "surrogateescape")  # refused below, with the position
    if not utf8_text(prompt).strip():
        raise UsageError("the prompt is empty")
    no_empty_ids(("--resume", resume), ("--session-id", session_id), ("--from", source))
    if sum(bool(x) for x in (resume, cont, session_id, source)) > 1:
        raise UsageError("use only one of --resume, --continue, --session-id and --from")
    no_worktree_with(worktree, ("--resume", resume), ("--continue", cont), ("-s", session_id))
    from avatar.cli.chat import run_chat

    return run_chat(
        state,
        prompt,
        resume=resume,
        cont=cont,
        json_out=json_out,
        permission=permission,
        session_id=session_id,
        source=source,
        add_dirs=add_dirs,
        wait=not no_wait,
        worktree=worktree,
    )


@cli.command()
@click.option(
    "--resume",
    "resume",
    metavar="[ID]",
    is_flag=False,
    flag_value="",
    help="Resume a session (id or unique prefix; no id: pick one).",
)
@click.option(
    "--continue", "cont", is_flag=True, help="Continue the newest session in this directory."
)
@click.option(
    "--from",
    "source",
    metavar="SESSION",
    help="Start a new session seeded with a handoff of another session.",
)
@click.option(
    "--import",
    "imported",
    is_flag=True,
    help="With --from: write that conversation into this provider's own store.",
)
@click.option(
    "--permission",
    type=PERMISSIONS,
    help="Answer to actions that change things (ask: a menu for each).",
)
@ADD_DIR
@WORKTREE
@click.pass_obj
def repl(
    state: AppState,
    resume: str | None,
    cont: bool,
    source: str | None,
    imported: bool,
    permission: str | None,
    add_dirs: tuple[Path, ...],
    worktree: str | None,
) -> int:
    """Interactive session with slash commands (/help lists them)."""
    no_empty_ids(("--from", source))  # (`--resume` alone, an empty id, opens the picker)
    if sum((resume is not None, cont, source is not None)) > 1:
        raise UsageError("use only one of --resume, --continue and --from")
    if imported and source is None:
        raise UsageError("--import needs --from SESSION")
    no_worktree_with(worktree, ("--resume", resume is not None), ("--continue", cont))
    from avatar.cli.repl.start import run_repl

    return run_repl(
        state,
        resume=resume or None,
        cont=cont,
        source=source,
        permission=permission,
        add_dirs=add_dirs,
        pick=resume == "",
        imported=imported,
        worktree=worktree,
    )


@cli.group(cls=_Group)
def session() -> None:
    """List, inspect, delete, fork and rewind sessions of every provider."""


@session.command("list")
@click.option("--provider", "provider", help="Only this provider's sessions.")
@click.option(
    "--all",
    "all_",
    is_flag=True,
    help="Every provider's sessions (the default unless -p/--provider is given).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=50,
    show_default=True,
    help="Rows to show (0 = all).",
)
@click.option("--json", "json_out", is_flag=True, help="A JSON array of sessions.")
@click.option("--any-cwd", is_flag=True, help="Sessions of every directory, not just this project.")
@click.option("--refresh", is_flag=True, help="Also ask the agent for its sessions (session/list).")
@click.option("--tree", is_flag=True, help="Sessions under the ones they came from.")
@click.pass_obj
def session_list(
    state: AppState,
    provider: str | None,
    all_: bool,
    limit: int,
    json_out: bool,
    any_cwd: bool,
    refresh: bool,
    tree: bool,
) -> int:
    """Sessions of this project, newest first."""
    from avatar.cli.sessions import list_sessions

    if provider and all_:
        raise UsageError("use either --provider or --all")
    chosen = None if all_ else (provider or state.provider)
    return list_sessions(
        state, chosen, limit=limit, json_out=json_out, any_cwd=any_cwd, refresh=refresh, tree=tree
    )


@session.command("info")
@click.argument("session_id", metavar="ID")
@click.option("--json", "json_out", is_flag=True, help="As a JSON object.")
@click.pass_obj
def session_info(state: AppState, session_id: str, json_out: bool) -> int:
    """Facts about one session."""
    from avatar.cli.sessions import show_info

    return show_info(state, session_id, json_out=json_out)


@session.command("show")
@click.argument("session_id", metavar="ID")
@click.pass_obj
def session_show(state: AppState, session_id: str) -> int:
    """A session's transcript."""
    from avatar.cli.sessions import show_transcript

    return show_transcript(state, session_id)


@session.command("delete")
@click.argument("session_id", metavar="ID")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option(
    "--forget",
    is_flag=True,
    help="Remove only avatar's record of it (where the agent cannot delete).",
)
@click.option("--keep-copy", is_flag=True, help="Keep avatar's copy of the turns.")
@click.option(
    "--worktree",
    is_flag=True,
    help="Remove its git worktree too (else it is kept); refused while that holds work not "
    "committed.",
)
@click.option(
    "--discard",
    is_flag=True,
    help="With --worktree: remove it even so, throwing its uncommitted work away.",
)
@click.pass_obj
def session_delete(
    state: AppState,
    session_id: str,
    yes: bool,
    forget: bool,
    keep_copy: bool,
    worktree: bool,
    discard: bool,
) -> int:
    """Delete a session through its agent, and avatar's copy of it."""
    from avatar.cli.sessions import delete

    return delete(
        state,
        session_id,
        yes=yes,
        forget=forget,
        keep_copy=keep_copy,
        worktree=worktree,
        discard=discard,
    )


@session.command("fork")
@click.argument("session_id", metavar="ID")
@click.option(
    "--at",
    type=click.IntRange(min=1),
    metavar="N",
    help="Keep messages 1..N only (as `session show` numbers them).",
)
@click.option(
    "--from-copy",
    is_flag=True,
    help="Where the agent cannot fork: a new session seeded with the whole history.",
)
@click.pass_obj
def session_fork(state: AppState, session_id: str, at: int | None, from_copy: bool) -> int:
    """Fork a session into a new one on the same provider; prints the new id."""
    from avatar.cli.sessions import fork

    return fork(state, session_id, at, from_copy=from_copy)


cast("_Group", session).lazy = {
    "search": "avatar.cli.library_commands:session_search",
    "rename": "avatar.cli.library_commands:session_rename",
    "prune": "avatar.cli.library_commands:session_prune",
    "rewind": "avatar.cli.rewind_command:session_rewind",
    "export": "avatar.cli.portable:export_command",
    "import": "avatar.cli.portable:import_command",
}


@cli.command()
@click.option("--json", "json_out", is_flag=True, help="As a JSON array.")
@click.pass_obj
def providers(state: AppState, json_out: bool) -> int:
    """Which agents are installed: path, version, transport, capabilities, how to enable.

    The sandbox column says what the kernel's walls confine; under the table, the places
    outside the project avatar guessed for an agent from config that names none
    (`providers.NAME.state_dirs` names them instead)."""
    from avatar.cli.providers import show_providers

    return show_providers(state, json_out=json_out)


cli.lazy = {
    "trust": "avatar.cli.trust:trust_command",
    "serve": "avatar.cli.serve_command:serve_command",
    "ps": "avatar.cli.serve_command:ps_command",
    "attach": "avatar.cli.serve_command:attach_command",
    "mcp": "avatar.cli.mcp.command:mcp_command",
    "acp": "avatar.cli.acp.command:acp_command",
}

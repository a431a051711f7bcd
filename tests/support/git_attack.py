"""The `commondir` attack on git's metadata (issue 30), as the tests stage it: a directory made
inside `.git` with its own `config` naming a `core.fsmonitor` command, and `.git/commondir`
naming that directory — after which the user's next `git status` takes its config from there
and runs the command. The tests plant it through each door and then run `git status` as the
user, outside every wall, to see whether the command ran."""

from __future__ import annotations

import subprocess
from pathlib import Path


def files(marker: Path) -> dict[str, str]:
    """Relative path → content of each file the attack writes (the fsmonitor command creates
    `marker`)."""
    config = f"[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch {marker}\n"
    return {
        ".git/evil/config": config,
        ".git/evil/objects/.keep": "\n",
        ".git/evil/refs/.keep": "\n",
        ".git/commondir": "evil\n",
    }


def command(marker: Path) -> str:
    """The attack as one shell line."""
    steps = ["mkdir -p .git/evil/objects .git/evil/refs"]
    steps += [
        f"printf '%s' '{content}' > {rel}"
        for rel, content in files(marker).items()
        if not rel.endswith(".keep")
    ]
    return " && ".join(steps)


def patch(project: Path, marker: Path) -> str:
    """The attack as one `apply_patch` patch (codex's edit tool) adding each file."""
    added = "".join(
        f"*** Add File: {project / rel}\n" + "".join(f"+{line}\n" for line in text.splitlines())
        for rel, text in files(marker).items()
    )
    return f"*** Begin Patch\n{added}*** End Patch\n"


def users_git_status_runs_it(project: Path, marker: Path) -> bool:
    """Run `git status` in `project` as the user (outside the walls): did the planted
    command run?"""
    subprocess.run(["git", "status"], cwd=project, capture_output=True, timeout=60)
    return marker.exists()


def init(project: Path) -> None:
    """`project` as a git repository with one commit."""
    git = ["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    (project / "README").write_text("hello\n")
    subprocess.run([*git, "add", "README"], check=True)
    subprocess.run([*git, "commit", "-qm", "start"], check=True)

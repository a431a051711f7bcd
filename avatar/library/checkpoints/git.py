"""Running git on avatar's checkpoint store (docs/design.md §12): always told the store's git
directory, its own index and the work tree, in an environment of avatar's making (no `GIT_*`
of the caller's, which could point it at the project's repository; no system config), so the
project's `.git` is never read and nothing configured there runs."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from avatar.core.errors import AvatarError

_TIMEOUT = 600  # seconds: a first record of a huge tree hashes every file


class CheckpointError(AvatarError):
    """The store could not record or read the project's files."""


@dataclass(frozen=True)
class StoreGit:
    """git on the store `git_dir` with index `index`, over work tree `top`."""

    git_dir: Path
    index: Path
    top: Path

    def text(self, *args: str, ok: tuple[int, ...] = (0,)) -> str:
        """What `git ARGS` printed (a code outside `ok` is a `CheckpointError`)."""
        return self.run(list(args), b"", ok).decode("utf-8", "surrogateescape")

    def run(self, args: list[str], stdin: bytes, ok: tuple[int, ...] = (0,)) -> bytes:
        """What `git ARGS` printed, given `stdin`."""
        try:
            done = subprocess.run(
                self._argv(args),
                input=stdin,
                capture_output=True,
                cwd=self.top,
                env=self.env(),
                timeout=_TIMEOUT,
                check=False,
            )
        except FileNotFoundError:
            raise CheckpointError("git is not installed: files are not recorded") from None
        except (OSError, subprocess.SubprocessError) as e:
            raise CheckpointError(f"git could not run: {e}") from None
        if done.returncode not in ok:
            raise _failed(args[0], done.stderr, done.returncode)
        return done.stdout

    def start(self, args: list[str]) -> subprocess.Popen[bytes]:
        """`git ARGS` started, to be `finish`ed while something else runs."""
        try:
            return subprocess.Popen(
                self._argv(args),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.top,
                env=self.env(),
            )
        except FileNotFoundError:
            raise CheckpointError("git is not installed: files are not recorded") from None
        except OSError as e:
            raise CheckpointError(f"git could not run: {e}") from None

    @staticmethod
    def finish(proc: subprocess.Popen[bytes], what: str) -> bytes:
        """What a `start`ed `git WHAT …` printed, once it ended well."""
        try:
            out, err = proc.communicate(timeout=_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise CheckpointError("git took too long") from None
        if proc.returncode:
            raise _failed(what, err, proc.returncode)
        return out

    def _argv(self, args: list[str]) -> list[str]:
        return ["git", "--git-dir", str(self.git_dir), "--work-tree", str(self.top), *args]

    def env(self) -> dict[str, str]:
        """git's environment, explicit (see the module docstring)."""
        keep = ("PATH", "HOME", "XDG_CONFIG_HOME", "LANG", "LC_ALL", "TMPDIR")
        env = {k: v for k in keep if (v := os.environ.get(k)) is not None}
        env.setdefault("PATH", os.defpath)
        return env | {
            "GIT_INDEX_FILE": str(self.index),
            "GIT_AUTHOR_NAME": "avatar",
            "GIT_AUTHOR_EMAIL": "avatar@localhost",
            "GIT_COMMITTER_NAME": "avatar",
            "GIT_COMMITTER_EMAIL": "avatar@localhost",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
        }


def _failed(what: str, stderr: bytes, code: int) -> CheckpointError:
    said = stderr.decode("utf-8", "replace").strip().splitlines()
    return CheckpointError(f"git {what} failed: {said[-1] if said else code}")

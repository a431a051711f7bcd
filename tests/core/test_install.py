"""The install a newcomer runs: the README's first command and `.ci/run`.

- npm keeps the user's own settings. `npm ci --prefix bridges` made npm read its global config
  from `bridges/etc/npmrc` instead of the user's, so a company's CA, proxy or mirror set there
  was lost and the install died on TLS. Each npm step of the install is run here as a config
  query (`npm config get cafile`, the same folder and flags, no network) under a global npmrc
  that names a CA.
- The Python dependencies come from a lock with hashes (requirements.lock, made by .ci/lock
  from pyproject.toml): every range of pyproject is pinned there, inside its range, hashed, and
  no index or host is named.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"


def readme_install() -> str:
    """The README's install command: the first line of its first shell block."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block, "the README opens with no shell block"
    return block.group(1).splitlines()[0]


def steps(command: str) -> list[str]:
    """The `&&`-joined steps of a shell line, a parenthesised group kept whole."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(command):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and command.startswith("&&", i):
            out.append(command[start:i].strip())
            start = i + 2
    out.append(command[start:].strip())
    return [s for s in out if s]


def npm_steps(lines: list[str]) -> list[str]:
    """Each step that runs `npm ci`, as written."""
    found = [s for line in lines for s in steps(line) if re.search(r"\bnpm ci\b", s)]
    assert found, "no npm ci step found"
    return found


def ci_lines() -> list[str]:
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if not line.lstrip().startswith("#")]


@pytest.fixture
def company_npm(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose npm global config (at the user's own global prefix, where npm
    looks for it by default) names a company CA; no user npmrc, no npm setting in the env."""
    npm = shutil.which("npm")
    assert npm, "npm is a prerequisite (README)"
    prefix = tmp_path / "prefix"
    (prefix / "etc").mkdir(parents=True)
    ca = tmp_path / "company-ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    (prefix / "etc" / "npmrc").write_text(f"cafile={ca}\n")
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("NPM_CONFIG_")}
    env |= {"HOME": str(home), "NPM_CONFIG_PREFIX": str(prefix)}
    return env, ca


def as_config_query(step: str) -> str:
    """The step with `npm ci` and its install-only flags replaced by `npm config get cafile`."""
    query = re.sub(r"\bnpm ci\b", "npm config get cafile", step)
    return re.sub(r"\s--no-(audit|fund)\b", "", query)


@pytest.mark.parametrize("where", ["README", ".ci/run"])
def test_the_install_keeps_the_user_s_npm_global_config(
    where: str, company_npm: tuple[dict[str, str], Path]
) -> None:
    env, ca = company_npm
    for step in npm_steps([readme_install()] if where == "README" else ci_lines()):
        out = subprocess.run(
            ["bash", "-c", as_config_query(step)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == str(ca), f"{where}: `{step}` loses the global npmrc"


def _pins() -> dict[str, tuple[str, str]]:
    """name -> (version, the lock's entry) of every requirement the lock pins."""
    entries = re.split(r"\n(?=\S)", LOCK.read_text(encoding="utf-8"))
    pins = {}
    for entry in entries:
        if entry.startswith("#"):
            continue
        m = re.match(r"([A-Za-z0-9._-]+)==([^\s;\\]+)", entry)
        assert m, f"not a pin: {entry[:80]!r}"
        pins[canonicalize_name(m.group(1))] = (m.group(2), entry)
    return pins


def test_every_python_dependency_is_locked_inside_its_range_with_hashes() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    wanted = [
        *project["project"]["dependencies"],
        *project["project"]["optional-dependencies"]["dev"],
        *project["build-system"]["requires"],
    ]
    pins = _pins()
    for line in wanted:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not in requirements.lock: run .ci/lock"
        version, _ = pins[name]
        assert req.specifier.contains(version, prereleases=True), (
            f"{req.name}=={version} is outside pyproject's {req.specifier}: run .ci/lock"
        )
    for name, (_, entry) in pins.items():
        assert "--hash=sha256:" in entry, f"{name} has no hash"


def test_the_lock_names_no_index_or_host() -> None:
    text = LOCK.read_text(encoding="utf-8")
    assert "://" not in text
    options = [ln for ln in text.splitlines() if ln.lstrip().startswith("-")]
    assert all(ln.strip().startswith("--hash=") for ln in options), options


def test_the_install_uses_the_lock() -> None:
    for where, line in [("README", readme_install()), (".ci/run", "\n".join(ci_lines()))]:
        assert "--require-hashes -r requirements.lock" in line, where
        assert "--no-deps --no-build-isolation -e ." in line, where


def test_the_oldest_python_run_collects_without_xdist() -> None:
    """.ci/run's second pass (the secret detector on the distribution's Python) installs pytest
    without xdist; the suite's conftest must load there too. It did not once: an xdist hook
    without `optionalhook` stopped that pass at collection, and CI with it."""
    assert '-o addopts=""' in "\n".join(ci_lines())
    run = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-p", "no:xdist", "-o", "addopts=", "--collect-only"),
            *("-q", "tests/policy/test_secrets.py"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]

"""Hypothesis profiles for the fuzz tests: bounded in CI, as long as you like by hand.

    HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest -p no:cacheprovider tests/hardening -k fuzz

`ci` (the default) runs the same few dozen examples per property so the suite stays fast; `long`
runs thousands (minutes); `AVATAR_FUZZ_EXAMPLES=N` sets any count.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

_QUIET = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large]

# `ci` is derandomized: the same examples every run, so CI fails for a change, not for luck;
# `long` (and a custom count) explores new ones each run.
settings.register_profile(
    "ci", max_examples=30, deadline=None, suppress_health_check=_QUIET, derandomize=True
)
settings.register_profile("long", max_examples=3000, deadline=None, suppress_health_check=_QUIET)
if os.environ.get("AVATAR_FUZZ_EXAMPLES"):
    settings.register_profile(
        "custom",
        max_examples=int(os.environ["AVATAR_FUZZ_EXAMPLES"]),
        deadline=None,
        suppress_health_check=_QUIET,
    )
    settings.load_profile("custom")
else:
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker of the long hardening tests (they run in CI all the same)."""
    config.addinivalue_line("markers", "slow: a long hardening test (kill tests); -m 'not slow'")

"""Work that must grow linearly with its input, however hostile the input (issue 20's odd
input, moved here from the tests' wall-clock bounds in issue 31): each row times the same work
on an input and on one four times as long, in this run, and judges the growth — linear is 4×,
quadratic 16×; the target is ≤ 6× (linear, with room for timing noise).

- the secret detector on every adversarial input of `tests/policy/test_secrets.py` (the PEM
  pattern it replaced took 11.7 s on 232 KB of BEGIN lines), 0.5 MB → 2 MB: the worst growth;
- a glob with many stars (`*a*a*a*a*a*a*a*b`) over names 100 → 400 characters long (it took
  hours on 200);
- the piece `session search` shows of a session repeating the query word, 0.5 MB → 2 MB
  (FTS5's own snippet() weighed every hit against every other: two minutes on 2 MB).

Times are this process's CPU time (`time.process_time`), the best of a few runs.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import row

#: Growth allowed when the input grows 4×: linear (4×) with room for noise; quadratic is 16×.
LINEAR_4X = 6.0


def _cpu(work: Callable[[], object], runs: int) -> float:
    """The least CPU time of `runs` runs of `work`."""
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best


def _growth(name: str, small: float, big: float) -> dict[str, object]:
    return row(name, big, small, f"≤ {LINEAR_4X:.0f}× (linear: 4×)", big <= LINEAR_4X * small)


def _secrets(runs: int) -> dict[str, object]:
    from tests.policy.test_secrets import ADVERSARIAL, DETECTOR

    worst: tuple[float, float, str] = (0.0, 1.0, "")
    for label, make in ADVERSARIAL.items():
        big = make()
        small = big[: len(big) // 4 - 64] + big[-64:]  # (its end kept: some end in `…`)
        t_small = _cpu(lambda s=small: DETECTOR.mask(s), runs)  # type: ignore[misc]
        t_big = _cpu(lambda b=big: DETECTOR.mask(b), runs)  # type: ignore[misc]
        if t_big / max(t_small, 1e-6) > worst[0] / max(worst[1], 1e-6):
            worst = (t_big, t_small, label)
    t_big, t_small, label = worst
    return _growth(f"secret detector, worst growth ({label})", t_small, t_big)


def _glob(runs: int) -> dict[str, object]:
    from avatar.policy.patterns import glob_match

    evil = "*a*a*a*a*a*a*a*b"

    def names(length: int) -> list[str]:
        return ["a" * length + str(n) for n in range(20)] + ["a" * (length // 2) + "b"]

    def match(batch: list[str]) -> Callable[[], object]:
        return lambda: [glob_match(evil, n) for _ in range(20) for n in batch]

    small, big = names(100), names(400)
    return _growth(
        f"glob {evil}, names 100 → 400 chars", _cpu(match(small), runs), _cpu(match(big), runs)
    )


def _search(runs: int) -> dict[str, object]:
    from tests.hardening.test_fuzz_search import _engine

    times = []
    for repeats in (37_500, 150_000):  # "ledger entry " × n: 0.5 MB, 2 MB
        with tempfile.TemporaryDirectory() as tmp:
            engine = _engine(Path(tmp), ["ledger entry " * repeats])
            engine.library.reindex()
            times.append(_cpu(lambda e=engine: list(e.search("ledger")), runs))  # type: ignore[misc]
    return _growth("search snippet, a session repeating the word 0.5 → 2 MB", *times)


def run(quick: bool) -> list[dict[str, object]]:
    """The growth of each piece of work whose hostile input once made it quadratic or worse."""
    runs = 2 if quick else 5
    return [_secrets(runs), _glob(runs), _search(runs)]

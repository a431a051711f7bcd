"""Run every benchmark and print one table: `python -m benchmarks [--quick] [--only NAME]`.

Each row shows a figure beside the baseline it is judged against, both measured in the same
run. To measure another build of avatar, name its `avatar` command in `AVATAR_BENCH_EXE`
(`benchmarks.common.avatar_exe`): for a copy of the package, a script that runs the installed
`avatar` with the copy first on PYTHONPATH. Most commands timed run in an environment of their
own (the tests' `avatar_env`), which PYTHONPATH does not reach; `native` and `resume` pass it on.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time

SUITES = (
    "startup",
    "sessions",
    "native",
    "acp",
    "oneshot",
    "server",
    "server_load",
    "search",
    "resume",
    "sandbox",
    "checkpoints",
    "linear",
    "mcp",
    "esc",
    "acp_face",
)
#: The whole run must finish within these many seconds (issue 14).
BUDGET = {True: 120.0, False: 600.0}


def main() -> int:
    """Run the suites; exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--quick", action="store_true", help="fewer runs, smaller data (<2 min)")
    parser.add_argument("--only", choices=SUITES, action="append", help="run only this suite")
    parser.add_argument("--json", action="store_true", help="rows as JSON")
    args = parser.parse_args()
    rows: list[dict[str, object]] = []
    # Time avatar as it runs after its first start, compiled: not recompiling every module
    # in each run when PYTHONDONTWRITEBYTECODE is set.
    import compileall
    from pathlib import Path

    import avatar

    compileall.compile_dir(Path(avatar.__file__).parent, quiet=1)
    started = time.perf_counter()
    if not args.json:
        print(f"    {'suite':9} {'figure':55} {'value':>14} {'baseline':>11} {'ratio':>8}  target")
    for name in args.only or SUITES:
        try:
            module = importlib.import_module(f"benchmarks.{name}")
        except ModuleNotFoundError:
            continue
        for r in module.run(args.quick):
            rows.append({"suite": name, **r})
            if not args.json:
                _print(rows[-1])
    total = time.perf_counter() - started
    budget = BUDGET[args.quick]
    # The run's own length is a figure too: `--quick` under 2 minutes, the full run under 10.
    # It is only judged when every suite ran.
    whole = args.only is None
    rows.append(
        {
            "suite": "total",
            "name": "whole benchmark run" + (" (--quick)" if args.quick else ""),
            "value": total,
            "unit": "s",
            "baseline": None,
            "ratio": None,
            "target": f"< {budget:.0f} s" if whole else "(reported: --only run)",
            "ok": total < budget or not whole,
        }
    )
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        _print(rows[-1])
    return 0 if all(r["ok"] for r in rows) else 1


def _print(r: dict[str, object]) -> None:
    unit = r.get("unit", "s")

    def shown(value: object) -> str:
        assert isinstance(value, int | float)
        return f"{value * 1000:.1f} ms" if unit == "s" else f"{value:,.1f} {unit}"

    # The baseline is the figure measured in the same run that the value is judged against.
    base = f"{shown(r['baseline'])}" if r.get("baseline") is not None else "-"
    ratio = f"{r['ratio']:.2f}×" if r.get("ratio") is not None else ""
    mark = "ok " if r["ok"] else "MISS"
    print(
        f"{mark} {r['suite']:9} {r['name']:55} {shown(r['value']):>14} {base:>11} {ratio:>8}"
        f"  {r['target']}"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    raise SystemExit(main())

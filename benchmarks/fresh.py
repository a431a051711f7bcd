"""One size of a benchmark, measured in this fresh interpreter; prints its figures as JSON.

    python -m benchmarks.fresh MODULE N [--quick]

The search benchmark measures each size so: a first index build is seconds of work, and in
one long process a later (larger) size also carried the heap that earlier sizes and suites
left, which a person's command never does. (The listing benchmark stays in-process: its
sizes take milliseconds, and a fresh interpreter's cold caches would decide its growth rows.)
"""

from __future__ import annotations

import importlib
import json
import sys


def main() -> None:
    module, n = sys.argv[1], int(sys.argv[2])
    figures = importlib.import_module(f"benchmarks.{module}").measure(n, "--quick" in sys.argv)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

"""One size of a benchmark, measured in this fresh interpreter; prints its figures as JSON.

    python -m benchmarks.fresh MODULE N [--quick]

The growth rows compare sizes: measured in one long process, a later (larger) size would
also carry the heap that earlier sizes and suites left, which a person's command never does.
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

"""Run every benchmark in benchmarks/bench_*.py, print one table, write _build/bench.json.

Budgets are reported, not asserted: timings on a shared machine are noisy.
Pass names (substrings) to run only some: ``python benchmarks/run.py explorer``.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from common import Result  # noqa: E402


def discover():
    for path in sorted(HERE.glob("bench_*.py")):
        module = importlib.import_module(path.stem)
        for attr in sorted(dir(module)):
            if attr.startswith("bench_") and callable(getattr(module, attr)):
                yield f"{path.stem}.{attr}", getattr(module, attr)


def main(selected: list[str]) -> int:
    rows: list[Result] = []
    for name, fn in discover():
        if selected and not any(s in name for s in selected):
            continue
        print(f"running {name} ...", flush=True)
        start = time.perf_counter()
        rows.extend(fn())
        print(f"  done in {time.perf_counter() - start:.1f} s", flush=True)
    width = max((len(r.name) for r in rows), default=10)
    print()
    print(f"{'benchmark':<{width}}  {'value':>10}  {'unit':<4}  {'budget':>8}  status  note")
    for r in rows:
        budget = "" if r.budget is None else f"{r.budget:g}"
        status = {None: "", True: "ok", False: "OVER"}[r.within_budget]
        print(
            f"{r.name:<{width}}  {r.value:>10.3g}  {r.unit:<4}  {budget:>8}  {status:<6}  {r.note}"
        )
    out = ROOT / "_build" / "bench.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps([r.as_dict() for r in rows], indent=1))
    print(f"\nwritten to {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

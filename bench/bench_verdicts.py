"""Benchmark: what rules v2 add to ``companion.judge.claims.all_verdicts()``, in one process.

Not a test.  Rules v2 added to the verdicts: the power of the applied test (Monte Carlo,
:func:`companion.rules.power.directional_power` and its kin), the gate's horizon and
memorisation parts (:func:`companion.train.studies.evidence.gate_from_evidence`, which also reads the
v1 loss gate's context part from the body's evidence table, so that small part is counted too),
the yardsticks, and the family's correction carried into the statuses (the premise
rows of :func:`companion.judge.claims.empirical_family`).  This computes every verdict once from
empty caches at the run size of ``COMPANION_RUN_SIZE`` (default ``ci``) with those functions
wrapped by timers, and reports the total, the time inside the v2 additions, and the ratio
``total / (total - v2 additions)``: the v2 path against the same path without them.

    PYTHONPATH=src python bench/bench_verdicts.py [--out bench/results/bench_verdicts.json]
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import time
from pathlib import Path

from _timing import emit


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)

    from companion.judge import claims, empirical

    from companion.rules import training as rules_training   # each caller holds the power solvers by name
    from companion.train.studies import evidence

    spent = {}

    def timed(module, name, minus=None):
        fn = getattr(module, name)

        @functools.wraps(fn)
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            before = spent.get(minus, 0.0) if minus else 0.0
            try:
                return fn(*a, **k)
            finally:
                inner = (spent.get(minus, 0.0) - before) if minus else 0.0
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - t0 - inner
        setattr(module, name, wrapper)

    timed(evidence, "loss_gate")
    timed(evidence, "gate_from_evidence")
    for mod in (rules_training, empirical):
        for name in ("directional_power", "equivalence_power", "threshold_power"):
            if hasattr(mod, name):
                timed(mod, name)
    timed(evidence, "published_iqr_width")
    timed(evidence, "speedup_nats")
    timed(claims, "_premise_family_rows")
    t0 = time.perf_counter()
    table = claims.all_verdicts()
    total = time.perf_counter() - t0
    added = sum(v for k, v in spent.items() if k != "loss_gate")
    result = {
        "run_size": os.environ.get("COMPANION_RUN_SIZE", "ci"), "verdicts": len(table),
        "total_s": round(total, 2), "v2_additions_s": round(added, 3),
        "v2_additions": {k: round(v, 3) for k, v in spent.items() if k != "loss_gate"},
        "ratio_v2_to_without": round(total / (total - added), 4),
        "machine": {"cpu_count": os.cpu_count(), "processor": platform.processor() or platform.machine()},
        "conditions": os.environ.get("BENCH_CONDITIONS", "not stated"),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
    }
    emit(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

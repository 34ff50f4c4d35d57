"""Benchmark: what the quantisation measurement of the zoo page costs (companion.survey.quantisation).

On one thread: reading the zoo's float checkpoints (``float_checkpoints``), then for each model
and scheme the round trip of its self-attention ``Wq``/``Wk`` (``quantised_copy``) and the scoring
of the quantised copy (``compare_layers``; the original is scored once per model, as
``scheme_changes`` does), each the median of ``--repeats`` runs (CPU seconds of the
process, so a busy machine inflates them less than wall time; wall time is recorded beside).
The page's measurement is the sum over models and schemes.

    PYTHONPATH=src python bench/bench_quantisation.py [--repeats 3] [--out bench/results/bench_quantisation.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path


def _timed(fn, repeats):
    cpu, wall, out = [], [], None
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        out = fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return out, statistics.median(cpu), statistics.median(wall)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("bench/results/bench_quantisation.json"))
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error(f"--repeats must be at least 1, got {args.repeats}")

    import torch

    torch.set_num_threads(1)
    from companion.survey import quantisation as qz

    floats, read_cpu, read_wall = _timed(qz.float_checkpoints, 1)
    from companion.survey.tables import layer_scores

    rows = []
    for name, ckpt in floats.items():
        original, o_cpu, o_wall = _timed(lambda: layer_scores(ckpt), args.repeats)
        values = sum(x.Wq.numel() + x.Wk.numel() for x in ckpt.self_attention_layers())
        for scheme in qz.SCHEMES:
            copy, q_cpu, q_wall = _timed(lambda: qz.quantised_copy(ckpt, scheme), args.repeats)
            _, s_cpu, s_wall = _timed(lambda: qz.compare_layers(ckpt, copy, name, scheme, original),
                                     args.repeats)
            row = {"model": name, "scheme": scheme, "qk_values": values,
                   "round_trip_cpu_s": round(q_cpu, 3), "round_trip_wall_s": round(q_wall, 3),
                   "score_copy_cpu_s": round(s_cpu, 3), "score_copy_wall_s": round(s_wall, 3),
                   "score_original_cpu_s": round(o_cpu, 3) if scheme == qz.SCHEMES[0] else 0.0,
                   "ns_per_value_round_trip": round(1e9 * q_cpu / values, 1)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    total = {k: round(sum(r[k] for r in rows), 2) for k in ("round_trip_cpu_s", "score_copy_cpu_s",
                                                             "score_original_cpu_s", "round_trip_wall_s",
                                                             "score_copy_wall_s")}
    result = {"machine": f"{platform.machine()} {os.cpu_count()} cores, {platform.python_version()}",
              "load_average": os.getloadavg(), "threads": 1, "repeats": args.repeats,
              "read_float_checkpoints_cpu_s": round(read_cpu, 2), "read_float_checkpoints_wall_s": round(read_wall, 2),
              "total": total, "rows": rows}
    print(json.dumps({"total": total, "load_average": result["load_average"]}))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

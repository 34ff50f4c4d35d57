"""Seconds per step of the rules-v3 confirmatory runs, as they were made (not a timing of
our own): BERT-Mini, 10,000 steps, one CPU thread each with bf16 autocast, two runs side by
side on the 2-core machine, the one-mode guard and kept weights included.  Read from the run
catalogue the book shows (``companion.train.studies.registered_bodies.runs_table``: its
``s/step`` and ``CPU s/step``), plus each run's thread count from its provenance.

Wall seconds per step count the time a run was paused (runs are stopped while the machine
runs other work) or waited for its core, so they are not a run's speed.  With one thread,
the process's CPU seconds per step are: the decoder / encoder ratio is taken on them, seed by
seed within one corpus (the two arms of a seed trained side by side).  CPU time still rises
when the other core is busy with more than the partner run, so read the ratios' spread too.
Medians and counts take one-thread CPU runs only (a run on more threads, or on a GPU, is
listed and left out of them).

    PYTHONPATH=src python bench/v3_runs_seconds.py --out bench/results/v3_runs_seconds.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path


def rows(root: Path | None = None) -> list[dict]:
    """One dict per landed v3 run: the catalogue's timing columns and the thread count."""
    from companion.train.runner.runs import read_provenance, runs_root
    from companion.train.studies.registered_bodies import runs_table

    root = Path(root) if root is not None else runs_root()
    out = []
    for _, r in runs_table(root=root).iterrows():
        hardware = read_provenance(root / r["run"]).get("hardware") or {}
        mode, init = r["arm"].split("/")
        cpu = float(r["CPU s/step"])
        out.append({"run": r["run"], "body": r["body"], "mode": mode, "init": init,
                    "seed": int(r["seed"]), "device": r["device"],
                    "threads": hardware.get("torch_threads"), "steps": int(r["steps"]),
                    "hours": round(float(r["hours"]), 3), "s_per_step": round(float(r["s/step"]), 5),
                    "cpu_s_per_step": None if math.isnan(cpu) else round(cpu, 5)})
    return out


def summary(r: list[dict]) -> dict:
    """Medians by mode and decoder / encoder ratios seed by seed, one-thread CPU runs only."""
    timed = [x for x in r if x["threads"] == 1 and x["cpu_s_per_step"] is not None]

    def medians(key):
        by_mode = {}
        for x in timed:
            by_mode.setdefault(x["mode"], []).append(x[key])
        return {m: round(statistics.median(v), 4) for m, v in by_mode.items()}

    result = {"runs": r, "median_s_per_step_wall": medians("s_per_step"),
              "median_cpu_s_per_step": medians("cpu_s_per_step"),
              "runs_per_mode": {m: sum(x["mode"] == m for x in timed) for m in medians("s_per_step")},
              "left_out_of_medians": [x["run"] for x in r if x not in timed]}
    # decoder against encoder within one seed of one body (the pair trained side by side)
    pairs = {}
    for x in timed:
        if x["init"] == "standard":
            pairs.setdefault((x["body"], x["seed"]), {})[x["mode"]] = x["cpu_s_per_step"]
    ratios = sorted(p["decoder"] / p["encoder"] for p in pairs.values() if {"decoder", "encoder"} <= set(p))
    if ratios:
        result["decoder_to_encoder_cpu_per_seed"] = [round(q, 3) for q in ratios]
        result["decoder_to_encoder_cpu_median"] = round(statistics.median(ratios), 3)
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    r = rows()
    if not r:
        raise SystemExit("no rules-v3 run has landed in data/runs yet (mixv3-*, wikiv3-*); run "
                         "data/runs/make_v3_runs.sh first.")
    text = json.dumps(summary(r), indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

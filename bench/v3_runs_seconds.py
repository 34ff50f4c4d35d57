"""Seconds per step of the rules-v3 confirmatory runs, as they were made (not a timing of
our own): BERT-Mini, 10,000 steps, one CPU thread each with bf16 autocast, two runs side by
side on the 2-core machine, the one-mode guard and kept weights included.  Read from each
landed run's provenance (``duration_s``, ``cpu_seconds``, ``steps``, ``hardware``).

Wall seconds per step count the time a run was paused (runs are stopped while the machine
runs other work) or waited for its core, so they are not a run's speed.  With one thread,
the process's CPU seconds per step are: the decoder / encoder ratio is taken on them, seed by
seed within one corpus (the two arms of a seed trained side by side).  CPU time still rises
when the other core is busy with more than the partner run, so read the ratios' spread too.

    PYTHONPATH=src python bench/v3_runs_seconds.py --out bench/results/v3_runs_seconds.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def rows(runs_dir: Path = ROOT / "data" / "runs", prefixes=("mixv3-", "wikiv3-")) -> list[dict]:
    out = []
    for prov in sorted(runs_dir.glob("*/provenance.json")):
        name = prov.parent.name
        if not name.startswith(prefixes):
            continue
        p = json.loads(prov.read_text())
        steps = int(p["config"]["steps"])
        out.append({"run": name, "mode": p["config"]["mode"], "init": p["config"]["init"],
                    "corpus": p["config"]["corpus"], "device": p["hardware"]["device"],
                    "threads": p["hardware"].get("torch_threads"), "steps": steps,
                    "duration_s": float(p["duration_s"]), "s_per_step": float(p["duration_s"]) / steps,
                    "cpu_s_per_step": (float(p["cpu_seconds"]) / steps if "cpu_seconds" in p else None)})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    r = rows()
    if not r:
        raise SystemExit("no rules-v3 run has landed in data/runs yet (mixv3-*, wikiv3-*); run "
                         "data/runs/make_v3_runs.sh first.")
    def medians(key):
        by_mode = {}
        for x in r:
            if x[key] is not None and x["threads"] == 1:
                by_mode.setdefault(x["mode"], []).append(x[key])
        return {m: statistics.median(v) for m, v in by_mode.items()}

    wall, cpu = medians("s_per_step"), medians("cpu_s_per_step")
    result = {"runs": r, "median_s_per_step_wall": {m: round(v, 4) for m, v in wall.items()},
              "median_cpu_s_per_step": {m: round(v, 4) for m, v in cpu.items()},
              "runs_per_mode": {m: sum(x["mode"] == m for x in r) for m in cpu}}
    # decoder against encoder within one seed of one corpus (the pair trained side by side)
    pairs = {}
    for x in r:
        if x["cpu_s_per_step"] is not None and x["init"] == "standard":
            pairs.setdefault((x["corpus"], x["run"].rsplit("-s", 1)[1]), {})[x["mode"]] = x["cpu_s_per_step"]
    ratios = sorted(p["decoder"] / p["encoder"] for p in pairs.values() if {"decoder", "encoder"} <= set(p))
    if ratios:
        result["decoder_to_encoder_cpu_per_seed"] = [round(q, 3) for q in ratios]
        result["decoder_to_encoder_cpu_median"] = round(statistics.median(ratios), 3)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

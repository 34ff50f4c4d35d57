"""Seconds per step of the rules-v3 confirmatory runs, as they were made (not a timing of
our own): BERT-Mini, 10,000 steps, one CPU thread each with bf16 autocast, two runs side by
side on the 2-core machine, the one-mode guard and kept weights included.  Read from each
landed run's provenance (``duration_s``, ``steps``, ``hardware``); the ratio decoder /
encoder compares runs made on the same machine under the same load.

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
                    "duration_s": float(p["duration_s"]), "s_per_step": float(p["duration_s"]) / steps})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    r = rows()
    if not r:
        raise SystemExit("no rules-v3 run has landed in data/runs yet (mixv3-*, wikiv3-*); run "
                         "data/runs/make_v3_runs.sh first.")
    by_mode = {}
    for x in r:
        by_mode.setdefault(x["mode"], []).append(x["s_per_step"])
    med = {m: statistics.median(v) for m, v in by_mode.items()}
    result = {"runs": r, "median_s_per_step": {m: round(v, 4) for m, v in med.items()}}
    if "decoder" in med and "encoder" in med:
        result["ratio_decoder_to_encoder"] = round(med["decoder"] / med["encoder"], 3)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

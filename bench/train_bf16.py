"""Benchmark: a BERT-Mini training step on one CPU thread, float32 against bf16 autocast.

Not a test.  The blind matrix (data/runs/blind_plan.md) trains BERT-Mini on Wikipedia with
``--cpu-bf16``: the forward pass under bf16 autocast, weights and optimiser in float32.  This
times that step against the float32 one (the path every earlier CPU run took), for the
encoder and the true decoder, in one process, alternating, on one thread: ``--short`` and
``--long`` steps from scratch, the difference divided by the difference in steps (set-up
and the evaluations cancel), ``--repeats`` times; medians and the ratio are reported.

    PYTHONPATH=src python bench/train_bf16.py [--short 3] [--long 13] [--repeats 3] [--out bench/results/train_bf16.json]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

import torch
from _timing import emit, seconds_per_step


def main(argv=None) -> int:
    from companion.train.text.data import token_data_for_corpus
    from companion.train.runner.loop import TrainConfig, train

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--short", type=int, default=3)
    ap.add_argument("--long", type=int, default=13)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if not 0 < args.short < args.long:
        ap.error("need 0 < --short < --long")
    torch.set_num_threads(1)
    data = token_data_for_corpus("wikipedia", 128, top_k=4096)

    def config(mode, bf16, steps):
        return TrainConfig(size="bert-mini", mode=mode, steps=steps, eval_every=steps, eval_blocks=8, warmup=1,
                           seed=0, cpu_bf16=bf16)

    per_step = {(m, b): [] for m in ("encoder", "decoder") for b in (False, True)}
    for _ in range(args.repeats):
        for (mode, bf16), vals in per_step.items():
            vals.append(seconds_per_step(lambda s: train(config(mode, bf16, s), data=data), args.short, args.long))
    med = {k: statistics.median(v) for k, v in per_step.items()}
    tokens = 16 * 128
    result = {
        "model": "bert-mini", "seq_len": 128, "batch_size": 16, "threads": 1,
        "seconds_per_step": {f"{m} {'bf16' if b else 'float32'}": round(v, 4) for (m, b), v in med.items()},
        "tokens_per_second": {f"{m} {'bf16' if b else 'float32'}": round(tokens / v, 1) for (m, b), v in med.items()},
        "bf16_time_ratio": {m: round(med[(m, True)] / med[(m, False)], 3) for m in ("encoder", "decoder")},
        "repeats": args.repeats, "steps": [args.short, args.long],
        "machine": {"cpu_count": os.cpu_count(), "processor": platform.processor() or platform.machine(),
                    "torch": torch.__version__,
                    "avx512_bf16": "avx512_bf16" in Path("/proc/cpuinfo").read_text()
                    if Path("/proc/cpuinfo").exists() else None},
        "conditions": os.environ.get("BENCH_CONDITIONS", "not stated"),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
    }
    emit(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

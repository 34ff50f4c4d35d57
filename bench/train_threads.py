"""Benchmark: a live run's training step on one CPU thread against every core.

Not a test.  The training chapters' live runs at the ``gpu`` size (BERT-Mini, the book's
default corpus, the compact 4,096-token vocabulary, ``TrainConfig`` defaults) train
``--short`` and ``--long`` steps with 1 thread and with ``--threads`` (default: every core),
in one process, alternating.  The time per step is the difference of the two runs divided
by the difference in steps, so set-up and the evaluations at the first and last step
cancel.  Repeated ``--repeats`` times; medians and the ratio are reported.  It is the
measurement behind the chapters' choice of one thread at the ``ci`` size only (two chapters
share two cores in CI) and every core otherwise.

    PYTHONPATH=src python bench/train_threads.py [--short 5] [--long 35] [--repeats 3] [--out bench/results/train_threads.json]
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
    from companion.train.text.data import build_token_data, default_corpus
    from companion.train.runner.loop import TrainConfig, train
    from companion.train.models.bert import size_for_run

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--short", type=int, default=5)
    ap.add_argument("--long", type=int, default=35)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if not 0 < args.short < args.long:
        ap.error("need 0 < --short < --long")
    size = size_for_run("gpu")
    data = build_token_data(default_corpus(), size.seq_len, top_k=4096)

    def config(steps):
        return TrainConfig(size=size.name, mode="encoder", steps=steps, eval_every=steps, warmup=1, seed=0)

    per_step = {1: [], args.threads: []}
    for _ in range(args.repeats):
        for n in per_step:
            torch.set_num_threads(n)
            per_step[n].append(seconds_per_step(lambda steps: train(config(steps), data=data), args.short, args.long))
    med = {n: statistics.median(v) for n, v in per_step.items()}
    result = {
        "model": size.name, "seq_len": size.seq_len, "batch_size": config(1).batch_size,
        "seconds_per_step": {f"{n} thread(s)": round(m, 4) for n, m in med.items()},
        "speedup": round(med[1] / med[args.threads], 3),
        "repeats": args.repeats, "steps": [args.short, args.long],
        "machine": {"cpu_count": os.cpu_count(), "processor": platform.processor() or platform.machine(),
                    "torch": torch.__version__},
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
    }
    emit(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What update logging costs: training steps with ``--log-updates N`` against without, one process.

At the regime size of the training chapters (size ``cpu``: 4 layers, width 128; 64-token
blocks, batch 8, the Wikipedia corpus, one thread), the same steps are timed with update
logging off, every 10 steps and every step, in alternating repeats so that a drift of the
machine hits every variant alike.  Writes one JSON line per variant with the median step
time and its ratio to logging off.

    PYTHONPATH=src python bench/update_logging.py --steps 60 --repeats 5 --out bench/results/update_logging.jsonl
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import torch

from companion.train.text.data import token_data_for_corpus
from companion.train.runner.loop import TrainConfig, train


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--every", type=int, nargs="+", default=[10, 1])
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    data = token_data_for_corpus("wikipedia", 64, top_k=4096)
    variants = [None] + list(args.every)
    times = {v: [] for v in variants}

    def cfg(every):
        # evaluation only at the end, so that the timed work is the steps and their logging
        return TrainConfig(size="cpu", steps=args.steps, batch_size=8, seq_len=64, lr=1e-3, warmup=5,
                           eval_every=args.steps, eval_blocks=1, device="cpu", update_every=every)

    train(cfg(None), data=data)  # warm-up: allocations, kernels
    for _ in range(args.repeats):
        for v in variants:
            t = time.perf_counter()
            train(cfg(v), data=data)
            times[v].append((time.perf_counter() - t) / args.steps)
    base = statistics.median(times[None])
    lines = []
    for v in variants:
        med = statistics.median(times[v])
        lines.append({"bench": "update_logging", "log_every": v, "steps": args.steps, "repeats": args.repeats,
                      "median_s_per_step": round(med, 5), "ratio_to_off": round(med / base, 4),
                      "threads": args.threads, "device": "cpu", "machine": platform.machine(),
                      "processor": platform.processor() or platform.machine(), "torch_threads": torch.get_num_threads(),
                      "torch": torch.__version__, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    for line in lines:
        print(json.dumps(line))
    if args.out:
        with Path(args.out).open("a") as fh:
            for line in lines:
                fh.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

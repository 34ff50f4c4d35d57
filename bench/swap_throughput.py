"""Benchmark: tokens per second of the objective swap's fine-tuning configurations on CPU.

Not a test.  The two MiniLM configurations of data/runs/make_swap_runs.sh (control: masked
LM; swap: causal next-token prediction), started from the zoo's all-MiniLM-L6-v2 with the
runs' settings (Wikipedia, its own tokenizer, 8 blocks of 128 tokens, AdamW, one thread),
in one process, alternating.  Each configuration trains ``--short`` and ``--long`` steps;
the time per step is the difference divided by the difference in steps, so set-up,
tokenization and the evaluations at the first and last step cancel.  Repeated
``--repeats`` times; medians are reported, with the swap / control ratio.

    PYTHONPATH=src python bench/swap_throughput.py [--short 5] [--long 25] [--repeats 2] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    from companion.train.data import token_data_for_corpus
    from companion.train.loop import TrainConfig, train
    from companion.train.pretrained import pretrained_folder

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--short", type=int, default=5)
    ap.add_argument("--long", type=int, default=25)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    data = token_data_for_corpus("wikipedia", 128, top_k=None,
                                 tokenizer_name=pretrained_folder("all-minilm-l6-v2"))
    tokens_per_step = 8 * 128
    per_step = {"control (masked LM)": [], "swap (next token)": []}
    load = os.getloadavg()
    for _ in range(args.repeats):
        for label, mode in (("control (masked LM)", "encoder"), ("swap (next token)", "decoder")):
            times = {}
            for steps in (args.short, args.long):
                cfg = TrainConfig(size="bert-mini", mode=mode, init_from="all-minilm-l6-v2", top_k=None,
                                  seq_len=128, seed=0, steps=steps, batch_size=8, lr=1e-4, warmup=1,
                                  eval_every=steps, eval_blocks=8, optimizer="adamw", weight_decay=0.01,
                                  device="cpu", update_every=10)
                t0 = time.perf_counter()
                train(cfg, data=data)
                times[steps] = time.perf_counter() - t0
            per_step[label].append((times[args.long] - times[args.short]) / (args.long - args.short))
    rows = {k: statistics.median(v) for k, v in per_step.items()}
    result = {
        "date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores",
        "torch": torch.__version__, "threads": 1, "load_before": load, "load_after": os.getloadavg(),
        "seconds_per_step": rows, "tokens_per_second": {k: tokens_per_step / v for k, v in rows.items()},
        "runs": per_step, "swap_over_control_time": rows["swap (next token)"] / rows["control (masked LM)"],
        "command": f"PYTHONPATH=src python bench/swap_throughput.py --short {args.short} --long {args.long} "
                   f"--repeats {args.repeats}",
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "swap_throughput.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

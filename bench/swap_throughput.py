"""Benchmark: tokens per second of the objective swap's fine-tuning configurations on CPU.

Not a test.  The two configurations of one model of data/runs/make_swap_runs.sh, started from
its zoo checkpoint with the runs' settings (Wikipedia, the model's own tokenizer, 8 blocks of
128 tokens, AdamW, update logging every 10 steps, one thread), in one process, alternating:

* ``--model minilm``: all-MiniLM-L6-v2; control masked LM, swap causal next-token prediction;
* ``--model smollm2``: SmolLM2-135M; control causal next-token prediction, swap masked LM
  without the causal mask (the other objective's held-out loss is logged, as in the runs).
  Each configuration trains ``--short`` and ``--long`` steps;
the time per step is the difference divided by the difference in steps, so set-up,
tokenization and the evaluations at the first and last step cancel.  Repeated
``--repeats`` times; medians are reported, with the swap / control ratio.

    PYTHONPATH=src python bench/swap_throughput.py [--model minilm] [--short 5] [--long 25] [--repeats 2]
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
from _timing import seconds_per_step

ROOT = Path(__file__).resolve().parents[1]

#: per model: zoo name, and (label, mode) of control and swap, control first
MODELS = {
    "minilm": ("all-minilm-l6-v2", (("control (masked LM)", "encoder"), ("swap (next token)", "decoder"))),
    "smollm2": ("smollm2-135m", (("control (next token)", "decoder"), ("swap (masked LM)", "encoder"))),
}


def main(argv=None) -> int:
    from companion.train.text.data import token_data_for_corpus
    from companion.train.runner.loop import TrainConfig, train
    from companion.train.models.pretrained import pretrained_folder

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=sorted(MODELS), default="minilm")
    ap.add_argument("--short", type=int, default=5)
    ap.add_argument("--long", type=int, default=25)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    zoo, arms = MODELS[args.model]
    data = token_data_for_corpus("wikipedia", 128, top_k=None, tokenizer_name=pretrained_folder(zoo))
    tokens_per_step = 8 * 128
    per_step = {label: [] for label, _ in arms}
    load = os.getloadavg()
    for _ in range(args.repeats):
        for label, mode in arms:
            def run(steps, mode=mode):
                train(TrainConfig(size="bert-mini", mode=mode, init_from=zoo, top_k=None,
                                  seq_len=128, seed=0, steps=steps, batch_size=8, lr=1e-4, warmup=1,
                                  eval_every=steps, eval_blocks=8, optimizer="adamw", weight_decay=0.01,
                                  device="cpu", update_every=10, eval_other=args.model == "smollm2"), data=data)

            per_step[label].append(seconds_per_step(run, args.short, args.long))
    rows = {k: statistics.median(v) for k, v in per_step.items()}
    result = {
        "date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores",
        "torch": torch.__version__, "threads": 1, "load_before": load, "load_after": os.getloadavg(),
        "seconds_per_step": rows, "tokens_per_second": {k: tokens_per_step / v for k, v in rows.items()},
        "model": zoo, "runs": per_step, "swap_over_control_time": rows[arms[1][0]] / rows[arms[0][0]],
        "command": f"PYTHONPATH=src python bench/swap_throughput.py --model {args.model} --short {args.short} "
                   f"--long {args.long} --repeats {args.repeats}",
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "swap_throughput.json" if args.model == "minilm" else f"swap_throughput_{args.model}.json"
    (out / name).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Training throughput of companion's loop against a Hugging Face Trainer baseline.

Both train the same BertForMaskedLM (same config, batch, sequence length, the same
masked-LM corruption drawn by ``companion.train.models.objectives.mask_tokens``, AdamW, gradient
clipping) on the same blocks, in one process, alternating (ours, theirs, ours, theirs, ...
``--repeats`` times) so that a drift in the machine's speed hits both; the result is the
median tokens per second of each, their ratio, and model FLOPs utilisation (MFU).

``--corpus wikipedia --size bert-mini --batch 16 --seq 128 --top-k 4096 --threads 1`` is
exactly the setting of the cached CPU runs (data/runs/make_wiki_runs.sh): real tokens from
the token cache, the compact vocabulary.  ``--corpus random`` draws ids uniformly instead
(what the GPU runs at full vocabulary use).

Model FLOPs per token (fwd + bwd, PaLM-style accounting):
    6 * N_body + 12 * L * d * T + 6 * d * V * 0.15
N_body: parameters outside the embeddings and the vocabulary head; the attention term
counts the T x T score and value products; the head is charged at the 15% of positions
where masked LM needs it (evaluating it at every position is overhead, not model work).
MFU = tokens/s * FLOPs per token / peak dense bf16 FLOP/s of the device.

What the speed-up can be: both loops run the same body; the Trainer also runs the
vocabulary head at every position, ours at the masked ones only.  ``flop_ratio`` (executed
FLOPs of the Trainer over ours, :func:`executed_flops_per_token`) is the speed-up if every
FLOP cost the same and nothing else cost anything; ``speedup_over_flop_ratio`` above 1 means
our loop also wastes less outside the FLOPs.  ``--breakdown`` adds the shares of our step's
CPU time by kind of operator (matrix products, dropout's random draws, the optimizer).

Usage (CPU, the cached runs' setting):
    python bench/train_throughput.py --corpus wikipedia --size bert-mini --batch 16 --seq 128 \
        --top-k 4096 --threads 1 --steps 40 --repeats 3 --out bench/results/train_throughput.jsonl
Usage (GPU):
    python bench/train_throughput.py --size bert --batch 32 --seq 512 --steps 50
    python bench/train_throughput.py --size bert --compile     # torch.compile our model
    ... --compile --compile-trainer                             # and the Trainer's (fair to both)
CPU smoke test (numbers meaningless, checks the script):
    python bench/train_throughput.py --size micro --batch 4 --seq 16 --steps 3 --warmup 1
Writes a JSON line to stdout and, with --out, to a file.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

# dense bf16 peak without sparsity, from the vendors' data sheets (FLOP/s)
PEAK_BF16 = {"H100": 989e12, "H200": 989e12, "A100": 312e12, "L4": 121e12, "T4": 65e12}


def peak_flops(device, override=None):
    if override:
        return override * 1e12
    if device.type != "cuda":
        return float("nan")
    name = torch.cuda.get_device_name(device)
    for key, val in PEAK_BF16.items():
        if key in name:
            return val
    return float("nan")


def flops_per_token(config, seq_len):
    d, L, V, ff = config.hidden_size, config.num_hidden_layers, config.vocab_size, config.intermediate_size
    n_body = L * (4 * d * d + 2 * d * ff)
    return 6 * n_body + 12 * L * d * seq_len + 6 * d * V * 0.15


def executed_flops_per_token(config, seq_len, batch, head="selective"):
    """FLOPs per token each loop actually executes (fwd + bwd, the same accounting).

    The body and the attention are the same for both loops.  The vocabulary head (its
    ``d x d`` transform and its ``d x V`` decoder) runs at every position in the Trainer
    (``head="full"``) and, in companion's loop, only at the fixed-size gather of
    :func:`companion.train.models.objectives.target_bound` positions per batch
    (``head="selective"``).  Their ratio is the speed-up to expect if both loops ran every
    FLOP at the same rate with no other cost: the ceiling of what skipping head work buys.
    """
    from companion.train.models.objectives import target_bound

    d, L, V, ff = config.hidden_size, config.num_hidden_layers, config.vocab_size, config.intermediate_size
    body = 6 * L * (4 * d * d + 2 * d * ff) + 12 * L * d * seq_len
    share = 1.0 if head == "full" else target_bound(batch * seq_len, 0.15) / (batch * seq_len)
    return body + 6 * (d * d + d * V) * share


def time_breakdown(step, n=5):
    """Shares of self CPU time of ``n`` calls of ``step`` by kind of operator (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for i in range(n):
            step(i)
    kinds = {"matmul": ("aten::mm", "aten::addmm", "aten::bmm", "aten::matmul", "aten::linear"),
             "dropout random draws": ("aten::bernoulli_", "aten::bernoulli"),
             "optimizer": ("aten::_fused_adamw_", "aten::lerp_", "aten::addcdiv_", "aten::addcmul_", "aten::sqrt",
                           "aten::_foreach_lerp_", "aten::_foreach_addcdiv_", "aten::_foreach_addcmul_",
                           "aten::_foreach_sqrt", "aten::_foreach_mul_", "aten::_foreach_div_", "aten::_foreach_add_")}
    total, out = 0.0, dict.fromkeys(kinds, 0.0)
    for ev in prof.key_averages():
        t = ev.self_cpu_time_total
        total += t
        for kind, names in kinds.items():
            if ev.key in names:
                out[kind] += t
    out = {k: v / total for k, v in out.items()}
    out["other"] = 1.0 - sum(out.values())
    return out


def random_blocks(n, seq, vocab, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(999, vocab, (n, seq), generator=g)  # ids above BERT's specials


def bench_companion(args, device, blocks, vocab, spec, breakdown=False):
    from companion.train.models.bert import build_model, get_size
    from companion.train.models.objectives import SelectiveLM, objective_loss

    torch.manual_seed(0)
    model = build_model(_size(args), vocab, "encoder").to(device)
    net = SelectiveLM(model)
    fwd = torch.compile(net) if args.compile else net
    opt = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01, fused=device.type == "cuda")
    g = torch.Generator().manual_seed(0)
    bf16 = device.type == "cuda" and not args.fp32

    def step(i):
        ids = blocks[(i * args.batch) % len(blocks):][: args.batch]  # masked on the CPU
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss, _ = objective_loss(fwd, ids, "encoder", spec, g)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    for i in range(args.warmup):
        step(i)
    _sync(device)
    t0 = time.perf_counter()
    for i in range(args.steps):
        step(i)
    _sync(device)
    rate = args.steps * args.batch * args.seq / (time.perf_counter() - t0)
    # profiled after the timed steps, so the profiler's overhead is not in the rate
    return rate, model.config, time_breakdown(step) if breakdown else None


def bench_trainer(args, device, blocks, vocab, spec):
    from transformers import BertForMaskedLM, Trainer, TrainerCallback, TrainingArguments

    from companion.train.models.bert import bert_config
    from companion.train.models.objectives import mask_tokens

    torch.manual_seed(0)
    config = bert_config(_size(args), vocab, "encoder")
    model = BertForMaskedLM(config)
    g = torch.Generator().manual_seed(0)

    def collator(features):  # the same corruption as ours, so only the loop differs
        ids = torch.stack([f["input_ids"] for f in features])
        inputs, labels = mask_tokens(ids, spec, g)
        return {"input_ids": inputs, "labels": labels}

    dataset = [{"input_ids": b} for b in blocks]

    class Clock(TrainerCallback):
        def on_step_end(self, a, state, control, **kw):
            if state.global_step == args.warmup:
                _sync(device)
                self.t0 = time.perf_counter()

    clock = Clock()
    targs = TrainingArguments(
        output_dir=args.tmp, per_device_train_batch_size=args.batch, max_steps=args.warmup + args.steps,
        learning_rate=5e-5, weight_decay=0.01, bf16=device.type == "cuda" and not args.fp32,
        logging_steps=10**9, save_strategy="no", report_to=[],
        dataloader_num_workers=2 if device.type == "cuda" else 0,  # CPU: no extra processes
        use_cpu=device.type != "cuda", seed=0, max_grad_norm=1.0, torch_compile=args.compile_trainer,
    )
    trainer = Trainer(model=model, args=targs, train_dataset=dataset, data_collator=collator, callbacks=[clock])
    trainer.train()
    _sync(device)
    return args.steps * args.batch * args.seq / (time.perf_counter() - clock.t0)


def _size(args):
    from dataclasses import replace

    from companion.train.models.bert import get_size

    return replace(get_size(args.size), seq_len=args.seq)


def load_blocks(args):
    """``(blocks [n, seq], vocab, masking spec)`` for the benchmark's data."""
    from companion.train.models.objectives import MaskingSpec

    n = max(args.batch * (args.steps + args.warmup), args.batch)
    if args.corpus == "random":
        spec = MaskingSpec(mask_id=103, vocab_size=30522, first_regular_id=999)
        return random_blocks(n, args.seq, 30522), 30522, spec
    from companion.train.text.data import token_data_for_corpus

    data = token_data_for_corpus(args.corpus, args.seq, top_k=args.top_k or None)
    idx = torch.randperm(len(data.train), generator=torch.Generator().manual_seed(0))[:n]
    return data.train[idx], data.vocab_size, data.masking


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="bert")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--compile", action="store_true", help="torch.compile our model")
    p.add_argument("--compile-trainer", action="store_true",
                   help="torch.compile the Trainer's model too (TrainingArguments(torch_compile=True))")
    p.add_argument("--corpus", default="random", help="random, or a corpus name (e.g. wikipedia)")
    p.add_argument("--top-k", type=int, default=4096, help="compact vocabulary (with --corpus)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--repeats", type=int, default=1, help="alternating measurements of each")
    p.add_argument("--fp32", action="store_true", help="no bf16 autocast (CPU always runs fp32)")
    p.add_argument("--peak-tflops", type=float, default=None)
    p.add_argument("--breakdown", action="store_true", help="CPU: profile a few of our steps by kind of operator")
    p.add_argument("--tmp", default="/tmp/companion-bench-trainer")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    if args.threads:
        torch.set_num_threads(args.threads)
    import os
    import statistics

    blocks, vocab, spec = load_blocks(args)
    ours_all, theirs_all = [], []
    for r in range(args.repeats):  # the breakdown once, in the last repeat
        profile = args.breakdown and device.type == "cpu" and r == args.repeats - 1
        o, config, shares = bench_companion(args, device, blocks, vocab, spec, breakdown=profile)
        ours_all.append(o)
        theirs_all.append(bench_trainer(args, device, blocks, vocab, spec))
    ours, theirs = statistics.median(ours_all), statistics.median(theirs_all)
    fpt = flops_per_token(config, args.seq)
    peak = peak_flops(device, args.peak_tflops)
    from companion.base.runtime import describe_device

    result = {"device": describe_device(device), "size": args.size, "batch": args.batch, "seq": args.seq,
              "steps": args.steps, "compile": args.compile,
              "compile_trainer": args.compile_trainer, "bf16": device.type == "cuda" and not args.fp32,
              "tokens_per_s_companion": ours, "tokens_per_s_trainer": theirs, "speedup": ours / theirs,
              "flops_per_token": fpt, "mfu_companion": ours * fpt / peak, "mfu_trainer": theirs * fpt / peak,
              "corpus": args.corpus, "vocab": vocab, "threads": torch.get_num_threads(),
              "tokens_per_s_companion_all": ours_all, "tokens_per_s_trainer_all": theirs_all,
              "load_average_1min": os.getloadavg()[0], "cpu_count": os.cpu_count(),
              "torch": torch.__version__}
    f_ours = executed_flops_per_token(config, args.seq, args.batch, "selective")
    f_theirs = executed_flops_per_token(config, args.seq, args.batch, "full")
    result.update({"executed_flops_per_token_companion": f_ours, "executed_flops_per_token_trainer": f_theirs,
                   "flop_ratio": f_theirs / f_ours, "speedup_over_flop_ratio": (ours / theirs) / (f_theirs / f_ours),
                   "time_breakdown_companion": shares})
    line = json.dumps(result)
    print(line)
    if args.out:
        with open(args.out, "a") as f:
            f.write(line + "\n")
    return result


if __name__ == "__main__":
    main()

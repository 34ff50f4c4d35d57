"""Training throughput of companion's loop against a Hugging Face Trainer baseline.

Both train the same BertForMaskedLM (same config, batch, sequence length, masked-LM
objective with 15% masking, AdamW) in the same process, one after the other; the result is
tokens per second for each, their ratio, and model FLOPs utilisation (MFU).

Model FLOPs per token (fwd + bwd, PaLM-style accounting):
    6 * N_body + 12 * L * d * T + 6 * d * V * 0.15
N_body: parameters outside the embeddings and the vocabulary head; the attention term
counts the T x T score and value products; the head is charged at the 15% of positions
where masked LM needs it (evaluating it at every position is overhead, not model work).
MFU = tokens/s * FLOPs per token / peak dense bf16 FLOP/s of the device.

Usage (GPU):
    python bench/train_throughput.py --size bert --batch 32 --seq 512 --steps 50
    python bench/train_throughput.py --size bert --compile     # torch.compile our model
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


def random_blocks(n, seq, vocab, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(999, vocab, (n, seq), generator=g)  # ids above BERT's specials


def bench_companion(args, device, blocks):
    from companion.train.model import build_model, get_size
    from companion.train.objectives import MaskingSpec, SelectiveLM, objective_loss

    torch.manual_seed(0)
    model = build_model(get_size(args.size), 30522, "encoder").to(device)
    net = SelectiveLM(model)
    fwd = torch.compile(net) if args.compile else net
    opt = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01, fused=device.type == "cuda")
    spec = MaskingSpec(mask_id=103, vocab_size=30522, first_regular_id=999)
    g = torch.Generator().manual_seed(0)
    bf16 = device.type == "cuda" and not args.fp32

    def step(i):
        ids = blocks[(i * args.batch) % len(blocks):][: args.batch].to(device, non_blocking=True)
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
    return args.steps * args.batch * args.seq / (time.perf_counter() - t0), model.config


def bench_trainer(args, device, blocks):
    from transformers import (BertConfig, BertForMaskedLM, DataCollatorForLanguageModeling,
                              Trainer, TrainerCallback, TrainingArguments)

    from companion.train.data import load_tokenizer
    from companion.train.model import bert_config, get_size

    torch.manual_seed(0)
    config = bert_config(get_size(args.size), 30522, "encoder")
    model = BertForMaskedLM(config)
    tok = load_tokenizer()
    collator = DataCollatorForLanguageModeling(tok, mlm=True, mlm_probability=0.15)
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
        logging_steps=10**9, save_strategy="no", report_to=[], dataloader_num_workers=2,
        use_cpu=device.type != "cuda", seed=0, max_grad_norm=1.0,
    )
    trainer = Trainer(model=model, args=targs, train_dataset=dataset, data_collator=collator, callbacks=[clock])
    trainer.train()
    _sync(device)
    return args.steps * args.batch * args.seq / (time.perf_counter() - clock.t0)


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
    p.add_argument("--compile", action="store_true")
    p.add_argument("--fp32", action="store_true", help="no bf16 autocast (CPU always runs fp32)")
    p.add_argument("--peak-tflops", type=float, default=None)
    p.add_argument("--tmp", default="/tmp/companion-bench-trainer")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    blocks = random_blocks(max(args.batch * (args.steps + args.warmup), args.batch), args.seq, 30522)
    ours, config = bench_companion(args, device, blocks)
    theirs = bench_trainer(args, device, blocks)
    fpt = flops_per_token(config, args.seq)
    peak = peak_flops(device, args.peak_tflops)
    from companion.runtime import describe_device

    result = {"device": describe_device(device), "size": args.size, "batch": args.batch, "seq": args.seq,
              "steps": args.steps, "compile": args.compile, "bf16": device.type == "cuda" and not args.fp32,
              "tokens_per_s_companion": ours, "tokens_per_s_trainer": theirs, "speedup": ours / theirs,
              "flops_per_token": fpt, "mfu_companion": ours * fpt / peak, "mfu_trainer": theirs * fpt / peak,
              "torch": torch.__version__}
    line = json.dumps(result)
    print(line)
    if args.out:
        with open(args.out, "a") as f:
            f.write(line + "\n")
    return result


if __name__ == "__main__":
    main()

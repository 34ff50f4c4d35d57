"""``companion train``: train one configuration and write its run directory.

Wire it into a parent parser with :func:`add_train_parser` and dispatch to
:func:`run_train`; ``python -m companion.train.cli ...`` runs it stand-alone.

Example::

    companion train --mode encoder --init symmetric --size cpu --steps 500 --seed 1 \\
        --out data/runs/cpu-encoder-symmetric-s1
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time

__all__ = ["add_train_parser", "run_train", "main"]


def _configure(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    from .init import INITS, PENALTIES
    from .model import MODEL_SIZES, MODES

    p.add_argument("--mode", choices=MODES, default="encoder",
                   help="encoder (masked LM), decoder (next-token), authors-decoder (masked LM under a causal mask)")
    p.add_argument("--init", choices=INITS, default="standard")
    p.add_argument("--size", choices=sorted(MODEL_SIZES), default=None,
                   help="model size; default from the run size (ci: tiny, gpu: bert-mini, paper: bert)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--grad-accum", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--eval-every", type=int, default=20)
    p.add_argument("--eval-blocks", type=int, default=64)
    p.add_argument("--penalty", choices=PENALTIES, default="none")
    p.add_argument("--penalty-coef", type=float, default=0.0)
    p.add_argument("--corpus", default="default",
                   help="'default' (offline), wikipedia, redpajama, or a local .txt/.jsonl/.csv file")
    p.add_argument("--tokenizer", default=None,
                   help="tokenizer folder or hub id (default: $COMPANION_TOKENIZER, else the offline "
                        "all-MiniLM-L6-v2 vocabulary, else bert-base-uncased)")
    p.add_argument("--top-k", type=int, default=4096, help="compact vocabulary size; 0 keeps all 30522 ids")
    p.add_argument("--seq-len", type=int, default=None)
    p.add_argument("--no-bf16", action="store_true", help="disable bf16 autocast on GPU")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--device", default=None)
    p.add_argument("--threads", type=int, default=None, help="CPU threads for torch")
    p.add_argument("--checkpoint-every", type=int, default=0)
    p.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    p.add_argument("--out", required=True, help="run directory for history.csv and provenance.json")
    p.add_argument("--log", default=None, help="append progress lines to this file")
    return p


def add_train_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``train`` subcommand to an ``argparse`` subparsers object."""
    p = subparsers.add_parser("train", help="train a BERT-style model and log its structure scores")
    _configure(p)
    p.set_defaults(func=run_train)
    return p


def run_train(args: argparse.Namespace) -> int:
    """Run ``companion train`` with parsed arguments; returns an exit status."""
    import torch

    from .loop import TrainConfig, provenance, train, write_run
    from .model import size_for_run

    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = TrainConfig(
        mode=args.mode, init=args.init, size=args.size or size_for_run().name, seed=args.seed,
        steps=args.steps, batch_size=args.batch_size, grad_accum=args.grad_accum, lr=args.lr,
        warmup=args.warmup, weight_decay=args.weight_decay, eval_every=args.eval_every,
        eval_blocks=args.eval_blocks, penalty=args.penalty, penalty_coef=args.penalty_coef,
        corpus=args.corpus, top_k=args.top_k or None, seq_len=args.seq_len, bf16=not args.no_bf16,
        compile=args.compile, device=args.device, checkpoint_every=args.checkpoint_every,
    )
    log = open(args.log, "a", buffering=1) if args.log else None

    def progress(line):
        msg = f"[{args.out}] {line}"
        print(msg, flush=True)
        if log:
            log.write(msg + "\n")

    from .data import build_token_data, load_texts

    t0 = time.time()
    data = build_token_data(load_texts(cfg.corpus), cfg.model_size.seq_len, top_k=cfg.top_k,
                            description=cfg.corpus, tokenizer_name=args.tokenizer)
    history = train(cfg, data=data, out_dir=args.out, resume=args.resume, progress=progress)
    seconds = time.time() - t0
    import os

    if int(os.environ.get("RANK", "0")) == 0:
        command = "companion train " + " ".join(shlex.quote(a) for a in getattr(args, "argv", None) or sys.argv[2:])
        write_run(args.out, history, provenance(cfg, command, seconds, data))
        ck = os.path.join(args.out, "checkpoint.pt")
        if not args.checkpoint_every and os.path.exists(ck):
            os.remove(ck)  # only kept when asked for; run directories stay small
    if log:
        log.close()
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = _configure(argparse.ArgumentParser(prog="companion train", description=__doc__.splitlines()[0]))
    args = p.parse_args(argv)
    args.argv = argv
    return run_train(args)


if __name__ == "__main__":
    raise SystemExit(main())

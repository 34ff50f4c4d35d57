"""``companion train``: train one configuration and write its run directory.

Wire it into a parent parser with :func:`add_train_parser` and dispatch to
:func:`run_train`; ``python -m companion.train.cli ...`` runs it stand-alone.

Example::

    companion train --mode encoder --init symmetric --size cpu --steps 500 --seed 1 \\
        --out data/runs/cpu-encoder-symmetric-s1
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
import time
from pathlib import Path

from ..base.paths import home_path
from .runner.arguments import (RUN_FILES, check_device, check_log, check_log_target, check_not_registry,
                               check_out_kind, check_utf8, old_kept_weights, prepare_out)

__all__ = ["add_train_parser", "run_train", "main"]


def _configure(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    from .models.init import INITS, PENALTIES
    from .models.bert import MODEL_SIZES, MODES
    from .runner.updates import OPTIMIZERS

    p.add_argument("--mode", choices=MODES, default="encoder",
                   help="encoder (masked LM), decoder (next-token), authors-decoder (masked LM under a causal mask)")
    p.add_argument("--init", choices=INITS, default="standard")
    p.add_argument("--size", choices=sorted(MODEL_SIZES), default=None,
                   help="model size; default from the run size (ci: tiny, gpu: bert-mini, paper: bert)")
    p.add_argument("--seed", type=int, default=0, help="a whole number in [0, 2**32 - 1]")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--grad-accum", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--decay-steps", type=int, default=None,
                   help="step at which the linear decay reaches 0 (default: --steps); larger than "
                        "--steps runs the first steps of a longer schedule, e.g. the paper's "
                        "--lr 5e-5 --warmup 200 --decay-steps 200000")
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--optimizer", choices=OPTIMIZERS, default="adamw",
                   help="adamw (the paper's), adam (L2 decay), sgd, sgd-momentum (0.9)")
    p.add_argument("--log-updates", type=_update_interval, default=None, metavar="N",
                   help="every N steps, log the symmetry and directionality of the applied update of each "
                        "layer's form, of the gradient-implied one and of the change since step 0")
    p.add_argument("--eval-every", type=int, default=20)
    p.add_argument("--eval-blocks", type=_eval_blocks, default=64,
                   help="held-out blocks per evaluation (>= 1), or 'all' for the whole held-out split")
    p.add_argument("--penalty", choices=PENALTIES, default="none")
    p.add_argument("--penalty-coef", type=float, default=0.0)
    p.add_argument("--corpus", default="wikipedia", type=_folder_named("--corpus", "a corpus name or file"),
                   help="offline: wikipedia (default), english-mix, shakespeare, kjv, python-docs; online: "
                        "wikimedia/wikipedia, slimpajama (with --max-tokens); or a local "
                        ".txt/.jsonl/.csv file")
    p.add_argument("--max-tokens", type=_positive("--max-tokens", "tokens"), default=None,
                   help="token budget for an online corpus (streamed until reached)")
    p.add_argument("--tokenizer", default=None, type=_folder_named("--tokenizer", "a tokenizer folder or hub id"),
                   help="tokenizer folder or hub id (default: $COMPANION_TOKENIZER, else the offline "
                        "all-MiniLM-L6-v2 vocabulary, else bert-base-uncased)")
    p.add_argument("--top-k", type=int, default=None,
                   help="compact vocabulary size (default 4096; with --from, the checkpoint's full vocabulary; "
                        "with --corpus english-mix and no --tokenizer, its fitted 4096-id vocabulary whole); "
                        "0 keeps all ids")
    p.add_argument("--from", dest="init_from", default=None, metavar="CHECKPOINT",
                   type=_folder_named("--from", "a zoo name, a checkpoint folder, a GGUF file or a hub id"),
                   help="start from a trained checkpoint's weights (a zoo name such as all-minilm-l6-v2, a "
                        "folder, GGUF file or hub id; BERT or LLaMA family) under --mode's objective: the objective swap")
    p.add_argument("--eval-other", action="store_true",
                   help="with --from a LLaMA checkpoint: also log the held-out loss of the other objective "
                        "(masked LM for a causal run, next token for a masked one)")
    p.add_argument("--guard", action="store_true",
                   help="also log rules v3's one-mode memorisation guard at every evaluation: the eval-mode "
                        "loss of fixed random samples of training and of held-out blocks (guard_train_loss, "
                        "guard_heldout_loss), as many blocks as the held-out loss reads, with its masks")
    p.add_argument("--keep-weights", type=_steps_list, default=(), metavar="STEPS",
                   help="comma-separated steps whose model weights are kept in OUT as "
                        "weights-stepN.safetensors (float32, with a .sha256), e.g. 5000,10000")
    p.add_argument("--seq-len", type=int, default=None)
    p.add_argument("--layers", type=int, default=None, help="override the size's number of layers")
    p.add_argument("--width", type=int, default=None,
                   help="override the size's hidden width (feed-forward width 4 x width)")
    p.add_argument("--heads", type=int, default=None, help="override the size's attention heads")
    p.add_argument("--no-bf16", action="store_true", help="disable bf16 autocast on GPU")
    p.add_argument("--cpu-bf16", action="store_true",
                   help="bf16 autocast on the CPU as well (weights and optimiser stay float32)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--device", default=None)
    p.add_argument("--threads", type=_positive("--threads", "threads"), default=None, help="CPU threads for torch")
    p.add_argument("--checkpoint-every", type=int, default=0)
    p.add_argument("--resume", action="store_true",
                   help="continue from OUT/checkpoint.pt (or start, if OUT holds no checkpoint yet)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a finished or interrupted run in OUT: its history, provenance, checkpoint "
                        "and kept weights (otherwise refused)")
    p.add_argument("--keep-checkpoint", action="store_true",
                   help="keep OUT/checkpoint.pt after the run finishes (deleted by default)")
    p.add_argument("--out", required=True, type=_folder_named("--out"),
                   help="run directory for history.csv and provenance.json")
    p.add_argument("--log", default=None, type=home_path, help="append progress lines to this file")
    return p


def _folder_named(flag: str, what: str = "the run's own folder, such as runs/my-run"):
    """An argparse type refusing an empty or blank name: ``--out "$RUN"`` with ``RUN`` unset
    would train into (and, with --overwrite, delete the run files of) the current folder, and
    ``--tokenizer "$TOK"`` would train on the default tokenizer.  A leading ``~`` is the home
    folder, as the shell would have read it had it not stood after ``=`` (``--out=~/runs/a``
    made a folder named ``~`` in the working folder)."""
    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"{flag} is empty (an unset variable?); give {what}")
        return home_path(text)
    return parse


def _positive(flag: str, what: str, hint: str = ""):
    """An argparse type: a whole number >= 1 (a negative or zero count is never taken for
    something else); ``hint`` follows the refusal of a number below 1."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number of {what} >= 1, got {text!r}")
        if n < 1:
            raise argparse.ArgumentTypeError(f"{flag} must be >= 1{hint}; got {n}")
        return n
    return parse


_update_interval = _positive("--log-updates", "steps", " (every N-th update is measured); leave it out to log "
                                                        "no updates")


def _steps_list(text: str) -> tuple:
    """An argparse type: ``5000,10000`` -> (5000, 10000), each a whole number >= 1."""
    out = []
    for part in text.split(","):
        try:
            n = int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected whole-number steps separated by commas, got {part!r} "
                                             f"in {text!r}") from None
        if n < 1:
            raise argparse.ArgumentTypeError(f"--keep-weights steps must be >= 1; got {n}")
        out.append(n)
    return tuple(sorted(set(out)))


def _eval_blocks(text: str):
    if text.strip().lower() == "all":
        return None
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of blocks >= 1 or 'all', got {text!r}")
    if n < 1:
        raise argparse.ArgumentTypeError(
            f"--eval-blocks must be >= 1 or 'all' (0 blocks would record a held-out loss of 0); got {n}")
    return n


def add_train_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``train`` subcommand to an ``argparse`` subparsers object."""
    p = subparsers.add_parser("train", help="train a BERT-style model and log its structure scores")
    _configure(p)
    p.set_defaults(func=run_train)
    return p


def _default_top_k(args: argparse.Namespace) -> int | None:
    """``--top-k``'s default: the full vocabulary with ``--from`` (the checkpoint's) and for a
    corpus trained on its own fitted vocabulary (english-mix, when no --tokenizer is
    given: it already has 4,096 ids, all used); else the compact 4,096 of BERT's 30,522."""
    from .text.corpora import CORPORA

    if args.init_from:
        return None
    spec = CORPORA.get(args.corpus)
    if spec is not None and spec.fitted_vocab and args.tokenizer is None:
        return None
    return 4096


def _config(args: argparse.Namespace):
    """The run's TrainConfig from the parsed options, or one clear error: checked before
    anything touches ``--out`` (so a bad option never costs a run folder)."""
    from ..base.errors import CompanionError
    from .runner.config import TrainConfig
    from .models.bert import size_for_run

    if args.resume and args.overwrite:
        raise CompanionError("--resume and --overwrite contradict each other; choose one.")
    try:
        cfg = TrainConfig(
            mode=args.mode, init=args.init, size=args.size or size_for_run().name, seed=args.seed,
        steps=args.steps, batch_size=args.batch_size, grad_accum=args.grad_accum, lr=args.lr,
        warmup=args.warmup, decay_steps=args.decay_steps, weight_decay=args.weight_decay,
        optimizer=args.optimizer, update_every=args.log_updates, eval_every=args.eval_every,
        eval_blocks=args.eval_blocks, penalty=args.penalty, penalty_coef=args.penalty_coef,
        corpus=args.corpus, top_k=_default_top_k(args) if args.top_k is None else (args.top_k or None),
            seq_len=args.seq_len, layers=args.layers, init_from=args.init_from, eval_other=args.eval_other,
            guard=args.guard, keep_weights=args.keep_weights,
            width=args.width, heads=args.heads, bf16=not args.no_bf16, cpu_bf16=args.cpu_bf16,
        compile=args.compile, device=args.device, checkpoint_every=args.checkpoint_every,
    )
    except ValueError as err:
        raise CompanionError(f"bad training option: {err}") from err
    from .runner.config import check_fits_memory

    check_fits_memory(cfg, 0, args.device)   # the vocabulary is not read yet: the bound without it
    if args.eval_every > args.steps:
        raise CompanionError(f"bad training option: --eval-every {args.eval_every} is longer than the run "
                             f"(--steps {args.steps}); the run would be evaluated only at its start and end. "
                             "Pass --eval-every <= --steps.")
    if args.checkpoint_every and args.checkpoint_every > args.steps:
        raise CompanionError(f"bad training option: --checkpoint-every {args.checkpoint_every} is longer than the "
                             f"run (--steps {args.steps}); pass a value <= --steps, or 0 for no checkpoints.")
    from .text.corpora import CORPORA, ONLINE_CORPORA

    known = set(CORPORA) | set(ONLINE_CORPORA) | {"default", "jigsaw"}
    online = ", ".join(sorted(ONLINE_CORPORA))
    if args.max_tokens is not None and args.corpus not in ONLINE_CORPORA:   # it was silently ignored
        raise CompanionError(f"bad training option: --max-tokens bounds an online corpus ({online}) only; --corpus "
                             f"{args.corpus} is read whole. Leave --max-tokens out, or choose an online corpus.")
    if args.corpus in ONLINE_CORPORA and args.max_tokens is None:
        raise CompanionError(f"bad training option: the online corpus {args.corpus} needs a token budget; pass "
                             "--max-tokens N (it is streamed until N tokens are read).")
    if args.corpus not in known and not Path(args.corpus).exists():
        raise CompanionError(f"bad training option: --corpus {args.corpus!r} is neither a known corpus "
                             f"({', '.join(sorted(set(CORPORA) | set(ONLINE_CORPORA)))}) nor an existing file.")
    if args.corpus not in known and not Path(args.corpus).is_file():   # a FIFO would block, a device never end
        raise CompanionError(f"bad training option: --corpus {args.corpus} is not a regular file (a folder, FIFO "
                             "or device); give a .txt, .jsonl or .csv file.")
    suffix = Path(args.corpus).suffix.lower()   # CORPUS.TXT is read as a .txt file
    if args.corpus not in known and suffix not in (".txt", ".jsonl", ".json", ".csv"):
        raise CompanionError(f"bad training option: --corpus {args.corpus} is "
                             f"{f'a {Path(args.corpus).suffix} file' if suffix else 'a file without a suffix'}; give a "
                             ".txt file of paragraphs or a .jsonl, .json or .csv file of records.")
    if args.corpus not in known:
        check_utf8(Path(args.corpus))
    return cfg


class _QuietParser(argparse.ArgumentParser):
    """A parser whose refusal is an exception, never a message and an exit."""

    def error(self, message):
        raise argparse.ArgumentError(None, message)


def _recorded_command(args: argparse.Namespace) -> str:
    """The command provenance records: the arguments ``companion train`` was given (the module
    entry point's own, or the shell's when they parse to this run's options); otherwise, when
    called from a program, the run's options written out from ``args``."""
    words = getattr(args, "argv", None)
    if words is None:
        parser = _configure(_QuietParser(exit_on_error=False, add_help=False))
        keys = [a.dest for a in parser._actions if a.dest != "help"]
        shell = sys.argv[2:] if sys.argv[1:2] == ["train"] else None
        try:
            seen = parser.parse_args(shell) if shell is not None else None
        except argparse.ArgumentError:
            seen = None
        if seen is not None and all(getattr(seen, k) == getattr(args, k, None) for k in keys):
            words = shell
        else:
            words = _options_of(parser, args)
    return "companion train " + " ".join(shlex.quote(str(a)) for a in words)


def _options_of(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list:
    """``args`` as ``companion train`` options: each option whose value is not its default."""
    words = []
    for action in parser._actions:
        if not action.option_strings or action.dest == "help":
            continue
        value, flag = getattr(args, action.dest, None), action.option_strings[-1]
        if isinstance(action, argparse._StoreTrueAction):
            words += [flag] if value else []
        elif action.dest == "out" or value != action.default:
            text = ("all" if value is None else ",".join(map(str, value)) if isinstance(value, (tuple, list))
                    else str(value))
            words += [flag, text]
    return words


def run_train(args: argparse.Namespace) -> int:
    """Run ``companion train`` with parsed arguments; returns an exit status."""
    import torch

    from ..base.cache import exclusive

    from .runner.devices import process_layout

    check_device(args.device)
    check_log(args.log, args.out)
    _say_hub_reads(args)   # before --from's configuration is read
    args.config = _config(args)   # every option checked before --out is created, locked or cleared
    _, rank = process_layout()
    out = Path(args.out)
    check_out_kind(out)
    check_log_target(args.log, out, args.config)
    check_not_registry(out)
    if args.threads:
        torch.set_num_threads(args.threads)
    rank0 = rank == 0
    if not rank0:
        return _run_train(args, out, rank0, args.resume)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError:  # no lock possible; prepare_out says why in one line
        lock = contextlib.nullcontext()
    else:  # one training process per --out, held from the check of --out to the last file written
        lock = exclusive(out / ".train.lock", f"training into {out}", wait_s=0,
                         busy=f"another training process (pid {{pid}}) is writing to {out}; wait for it, "
                              "or choose another --out.")
    with lock:
        return _run_train(args, out, rank0, prepare_out(out, args.resume, args.overwrite, args.keep_weights))


def _say_hub_reads(args: argparse.Namespace) -> None:
    """Say on stderr, before the first request, that a checkpoint (--from) or tokenizer
    (--tokenizer, $COMPANION_TOKENIZER) named by hub id, or an online corpus, is read over the
    network: it was read without a word, and with no network it retried for a minute before
    the refusal."""
    import os

    from ..adapters.hub import _hub_offline
    from ..base.paths import is_hub_id
    from ..zoo.registry import is_zoo_name

    from .text.corpora import ONLINE_CORPORA

    if _hub_offline():
        return
    tokenizer = args.tokenizer or (None if args.init_from else os.environ.get("COMPANION_TOKENIZER") or None)
    for flag, name in (("--from", args.init_from), ("--tokenizer", tokenizer)):
        if (name and is_hub_id(name) and not os.path.lexists(name) and not is_zoo_name(name)
                and not (flag == "--tokenizer" and name == args.init_from)):
            print(f"{flag} {name} is read from the Hugging Face hub over the network (or its local cache); "
                  "HF_HUB_OFFLINE=1 forbids it", file=sys.stderr, flush=True)
    if args.corpus in ONLINE_CORPORA and os.environ.get("HF_DATASETS_OFFLINE") != "1":
        print(f"--corpus {args.corpus} is streamed from the Hugging Face hub over the network; HF_HUB_OFFLINE=1 "
              "forbids it", file=sys.stderr, flush=True)


def _run_train(args, out: Path, rank0: bool, resume: bool) -> int:
    from .runner.checkpoints import digest_path
    from .runner.loop import train
    from .runner.provenance import provenance, write_run

    cfg = args.config   # made by run_train before --out was touched
    from ..base.outputs import open_stream

    log = open_stream(args.log, "--log file", mode="a", buffering=1) if args.log else None

    from ..base.progress import shown

    def progress(line):
        msg = shown(f"[{args.out}] {line}")   # an escape sequence in a name reaches no terminal
        print(msg, flush=True)
        if log:
            log.write(msg + "\n")

    from .text.data import token_data_for_corpus

    t0, c0 = time.time(), time.process_time()
    tokenizer = args.tokenizer
    if tokenizer is None and cfg.init_from is not None:  # the checkpoint's own tokenizer
        from .models.pretrained import pretrained_folder

        tokenizer = pretrained_folder(cfg.init_from)
    from .text.corpora import fetching_allowed

    try:
        with fetching_allowed():   # an explicit command: a missing pinned archive is fetched, and said
            data = token_data_for_corpus(cfg.corpus, cfg.model_size.seq_len, top_k=cfg.top_k,
                                         tokenizer_name=tokenizer, max_tokens=args.max_tokens,
                                         progress=progress)
    except OSError as err:   # transformers' "couldn't connect ... cached files" (no errno): not a disk error
        from ..base.errors import CompanionError
        from .text.corpora import ONLINE_CORPORA

        why = (str(err).splitlines() or [type(err).__name__])[0][:120]
        online = cfg.corpus in ONLINE_CORPORA and (isinstance(err, ConnectionError) or tokenizer is None)
        if err.errno is not None or not (online or tokenizer):
            raise
        if online:   # datasets' ConnectionError when the hub cannot be reached: it was a traceback
            raise CompanionError(f"the online corpus {cfg.corpus} cannot be streamed from the Hugging Face hub ({why}); "
                                 "check the network, or train on an offline corpus (`companion corpus list`). "
                                 "Nothing in --out was changed.") from None
        raise CompanionError(f"the tokenizer {tokenizer} cannot be loaded ({why}); give a "
                             "tokenizer folder, or a hub id already in the Hugging Face cache. Nothing in --out "
                             "was changed.") from None
    if args.overwrite and rank0:   # only now: a refusal above leaves the previous run as it was
        for name in RUN_FILES:
            (out / name).unlink(missing_ok=True)
        for old in old_kept_weights(out):   # the replaced run's, never the new run's
            old.unlink(missing_ok=True)
    if resume:
        progress("resuming from checkpoint.pt")
    history = train(cfg, data=data, out_dir=out, resume=resume, progress=progress)
    # durations add up every segment of a resumed run (the checkpoint carries the earlier ones)
    before = history.attrs.get("elapsed_before", {"wall": 0.0, "cpu": 0.0})
    seconds = time.time() - t0 + before["wall"]
    if rank0:
        command = _recorded_command(args)
        meta = provenance(cfg, command, seconds, data)
        meta["cpu_seconds"] = round(time.process_time() - c0 + before["cpu"], 1)
        meta["resumed"] = bool(resume)
        meta["started"] = history.attrs.get("started")
        meta["sittings"] = history.attrs.get("sittings", [])   # each segment's machine
        if meta["sittings"] and isinstance(meta["sittings"][-1], dict) and meta["sittings"][-1].get("device"):
            # the device this segment trained on (under torchrun cuda:LOCAL_RANK, whatever --device said)
            meta["hardware"]["device"] = meta["sittings"][-1]["device"]
        meta["seconds_per_step"] = round(seconds / max(1, cfg.steps), 4)
        from .runner.devices import process_layout

        meta["tokens_per_second"] = _tokens_per_second(cfg, seconds, process_layout()[0])
        write_run(out, history, meta)
        ck = out / "checkpoint.pt"
        if not args.keep_checkpoint and ck.exists():
            ck.unlink()  # run directories stay small; --keep-checkpoint keeps it
            digest_path(ck).unlink(missing_ok=True)
    if log:
        log.close()
    return 0


def _tokens_per_second(cfg, seconds: float, world: int = 1) -> float:
    """The run's training tokens over its seconds: every step trains ``batch_size`` blocks of
    ``seq_len`` tokens per micro-batch on each of the ``world`` processes (one global batch)."""
    tokens = cfg.steps * cfg.batch_size * cfg.grad_accum * world * cfg.model_size.seq_len
    return round(tokens / max(seconds, 1e-9), 1)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = _configure(argparse.ArgumentParser(prog="companion train", description=__doc__.splitlines()[0]))
    args = p.parse_args(argv)
    args.argv = argv
    from ..base.errors import CompanionError

    from ..base.progress import command_line

    from ..base.progress import shown

    try:
        with command_line():   # as `companion train`: waits are said on this command's stderr
            return run_train(args)
    except CompanionError as exc:  # the same one-line refusal as `companion train`
        print(f"companion train: error: {shown(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:   # a full disk or a folder turned read-only while training: as `companion train` says it
        import errno

        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM):
            raise
        fix = ("free some space or point --out elsewhere" if exc.errno in (errno.ENOSPC, errno.EDQUOT)
               else "choose a folder you can write to (--out, --log)")
        where = f" ({shown(exc.filename)})" if exc.filename else ""
        print(f"companion train: error: {exc.strerror or exc}{where}; {fix}.", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())

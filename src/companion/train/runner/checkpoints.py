"""Checkpoints: written with their SHA-256 beside them, read without unpickling
(``torch.load(weights_only=True)``), and resumed only by the same configuration on the same
data with the same number of processes; and the model weights a run keeps at chosen steps.

A checkpoint stores model, optimiser, scheduler, every rank's generator states and the
history, so a resumed run continues exactly where it stopped.
"""

from __future__ import annotations

import math
import numbers
import os
import stat
from dataclasses import MISSING
from pathlib import Path

import torch

from ...base.cache import sha256_file
from ...base.errors import CompanionError
from ..text.data import TokenData, masking_record
from .config import TrainConfig
from .state import _Run, _flush

__all__ = ["load_checkpoint", "digest_path", "pending_digest_path", "kept_weights_path", "keep_weights"]


def _rng_state(gens: dict) -> dict:
    state = {k: g.get_state() for k, g in gens.items()}
    state["torch"] = torch.get_rng_state()
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _all_rng_states(gens: dict, world: int) -> list[dict]:
    """Every rank's generator states, gathered on all ranks (rank order)."""
    mine = _rng_state(gens)
    if world == 1:
        return [mine]
    import torch.distributed as dist

    states: list = [None] * world
    dist.all_gather_object(states, mine)
    return states


def _set_rng_state(gens: dict, state: dict) -> None:
    for k, g in gens.items():
        g.set_state(state[k])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def digest_path(path: Path) -> Path:
    """Where a checkpoint's SHA-256 is kept: ``checkpoint.pt.sha256`` beside it."""
    return path.with_name(path.name + ".sha256")


def pending_digest_path(path: Path) -> Path:
    """Where the digest of a checkpoint being installed waits: ``checkpoint.pt.sha256.pending``."""
    return path.with_name(path.name + ".sha256.pending")


def _install_checkpoint(tmp: Path, path: Path) -> None:
    """Put the checkpoint written to ``tmp`` in place at ``path`` with its digest.

    The new file's digest is written first, as *pending*; then the file and the digest are
    renamed into place, in that order.  A kill at any point leaves either the old pair or the
    new checkpoint with its pending digest, which :func:`load_checkpoint` recognises, so a
    run killed while saving resumes from its own checkpoint."""
    from ...base.outputs import check_output, write_text_atomic

    digest, pending = digest_path(path), pending_digest_path(path)
    write_text_atomic(sha256_file(tmp) + "\n", pending, what="checkpoint digest")
    check_output(path, "checkpoint")       # a link or FIFO there is refused, never replaced
    check_output(digest, "checkpoint digest")
    os.replace(tmp, path)
    os.replace(pending, digest)


def _first_word(path: Path) -> str:
    """The digest a ``.sha256`` file holds: its first word, read as hexadecimal (capitals, as
    PowerShell writes them, a BOM or a Windows line end are the same digest)."""
    return (path.read_bytes().decode("utf-8", "replace").lstrip("\ufeff").split() or [""])[0].lower()


def _finish_install(pending: Path, digest: Path) -> None:
    """Put the pending digest of a checkpoint that matches it in place; in a folder that can no
    longer be written (a run copied read-only) the file is read as verified by the pending
    digest, and the install is left for a run that can write there."""
    try:
        os.replace(pending, digest)
    except OSError:
        pass


def load_checkpoint(path: str | Path, device="cpu", verify: bool = True) -> dict:
    """Read a checkpoint without unpickling code (``weights_only=True``), or explain why not.

    With ``verify`` the file's SHA-256 must match the digest written beside it
    (``checkpoint.pt.sha256``) when it was saved: a checkpoint changed on disk, even by one
    byte, would resume a different run.  A checkpoint from before digests is resumed with a
    warning."""

    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except OSError as err:
        raise CompanionError(f"cannot read the checkpoint {path}: {err.strerror or err}.") from None
    if not stat.S_ISREG(mode):
        raise CompanionError(f"the checkpoint {path} is not a regular file (a folder, FIFO or device), so it is "
                             "not read; move it away, or start the run again with --overwrite.")
    if verify:
        digest = digest_path(path)
        if digest.exists() and not digest.is_file():
            raise CompanionError(f"{digest} is not a regular file; move it away, or start the run again "
                                 "with --overwrite.")
        pending = pending_digest_path(path)
        if not digest.exists() and pending.is_file() and _first_word(pending) == sha256_file(path):
            _finish_install(pending, digest)   # killed before the first checkpoint's digest was in place
        if not digest.exists():  # written before checkpoints carried a digest
            import warnings

            warnings.warn(f"{path} has no {digest.name} beside it (written by an older version); resuming "
                          "it unverified.", stacklevel=2)
        elif (actual := sha256_file(path)) != _first_word(digest):
            if pending.is_file() and _first_word(pending) == actual:
                # killed between installing the file and its digest: finish the install
                _finish_install(pending, digest)
            else:
                raise CompanionError(f"{path} does not match the SHA-256 recorded when it was written: the "
                                     "file changed on disk, and resuming it would continue a different run. "
                                     "Start the run again with --overwrite.")
    try:
        ck = torch.load(path, map_location=device, weights_only=True)
    except Exception as err:  # noqa: BLE001 - any failure here is a bad file
        raise CompanionError(
            f"{path} is not a checkpoint this package wrote (it cannot be read with "
            f"weights_only=True: {str(err).splitlines()[0][:160]}); it is never unpickled. "
            "Delete it and start the run again.") from err
    missing = [k for k in ("model", "optimizer", "config", "step") if not isinstance(ck, dict) or k not in ck]
    if missing:
        raise CompanionError(f"{path} holds {type(ck).__name__ if not isinstance(ck, dict) else 'a dict'} without "
                             f"{', '.join(missing)}: not a checkpoint this package wrote. Start the run again "
                             "with --overwrite.")
    return ck


def _with_defaults(saved: dict) -> dict:
    """A saved configuration with the fields added since it was written set to their
    defaults, so a checkpoint stays resumable when TrainConfig grows a field."""
    from dataclasses import fields

    out = dict(saved)
    for f in fields(TrainConfig):
        if f.name not in out:
            out[f.name] = f.default if f.default is not MISSING else f.default_factory()
    return out


def _save_checkpoint(state: dict, tmp: Path, final: Path) -> None:
    """``torch.save(state, tmp)``; a full disk (which torch reports as a RuntimeError) is one
    clear :class:`CompanionError`."""
    try:
        torch.save(state, tmp)
    except (RuntimeError, OSError) as err:   # torch reports a full disk either way
        raise CompanionError(
            f"cannot write the checkpoint {final} ({(str(err).splitlines() or [''])[0][:120]}): the disk is "
            "full or the folder is not writable; free some space and continue with --resume (the previous "
            "checkpoint, if any, is unchanged).") from None


def _data_identity(data: TokenData) -> dict:
    """What a checkpoint records of its data, so that resuming on changed text is refused:
    the corpus's and the tokenizer's content hashes and the block counts; blocks without a
    corpus hash (made in memory) are identified by a hash of their tokens themselves."""
    src = getattr(data, "source", None) or {}
    out = {"documents_sha256": src.get("documents_sha256"), "tokenizer_sha256": src.get("tokenizer_sha256"),
           "train_blocks": int(data.train.shape[0]), "eval_blocks": int(data.eval.shape[0]),
           "vocab_size": int(data.vocab_size), "masking": masking_record(data.masking)}
    if out["documents_sha256"] is None:
        out["tokens_sha256"] = _tokens_sha256(data)
    return out


def _tokens_sha256(data: TokenData) -> str:
    """SHA-256 of the training and held-out blocks' ids (int64, in block order), in chunks."""
    import hashlib

    h = hashlib.sha256()
    for blocks in (data.train, data.eval):
        h.update(f"{tuple(blocks.shape)}".encode())
        for i in range(0, blocks.shape[0], 4096):
            part = blocks[i: i + 4096]
            part = part if isinstance(part, torch.Tensor) else part.tensor()
            h.update(part.to(torch.int64).cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def _same_data(saved: dict, now: dict) -> bool:
    """Whether a checkpoint's data identity is this run's (a checkpoint from before the
    tokens' own hash or the masking was recorded is compared on the rest)."""
    for later in ("tokens_sha256", "masking"):   # recorded since
        if later not in saved:
            now = {k: v for k, v in now.items() if k != later}
    return saved == now


def _check_contents(ck: dict, run: _Run, out: Path) -> None:
    """Refuse a checkpoint whose contents cannot be this run's state: a part missing, a step
    outside the run or other than its history's last, generator states of another shape.
    (A checkpoint edited with its digest written again passes the digest check.)"""
    cfg = run.cfg

    def bad(why):
        return CompanionError(f"the checkpoint in {out} is not a state of this run ({why}); start the run again "
                              "with --overwrite.")

    need = ["scheduler", "rng", "history"] + (["update_initial"] if run.recorder is not None else []) \
        + (["seen"] if cfg.guard else [])
    missing = [k for k in need if ck.get(k) is None]
    if missing:
        raise bad(f"it holds no {', '.join(missing)}")
    step = ck["step"]
    if isinstance(step, bool) or not isinstance(step, int) or not 1 <= step <= cfg.steps:
        raise bad(f"its step {step!r} is not one of this run's steps 1..{cfg.steps}")
    hist = ck["history"]
    if not isinstance(hist, list) or not all(isinstance(r, dict) and "step" in r for r in hist):
        raise bad("its history is not a list of rows with a step")
    odd = next((r for r in hist if not _history_row(r)), None)
    if odd is not None:   # a text step failed at the end; a row without its quantity went into history.csv
        raise bad(f"its history holds the row {str(odd)[:80]}, not a whole step >= 0, a quantity, a whole layer and "
                  "head, and a number")
    last = max((r["step"] for r in hist), default=None)
    if last != step:
        raise bad(f"its step {step} is not its history's last step {last}")
    if not isinstance(ck["rng"], list) or not all(isinstance(r, dict) and set(run.gens) <= set(r)
                                                   and "torch" in r for r in ck["rng"]):
        raise bad(f"its rng states are not one set of generators ({', '.join(run.gens)}, torch) per process")
    if cfg.guard and (not isinstance(ck["seen"], torch.Tensor) or tuple(ck["seen"].shape) != tuple(run.seen.shape)):
        got = tuple(ck["seen"].shape) if isinstance(ck["seen"], torch.Tensor) else type(ck["seen"]).__name__
        raise bad(f"its seen blocks are {got}, this run has {tuple(run.seen.shape)}")
    if run.recorder is not None:   # each layer's starting form: an empty list logged no update rows after resume
        mine, got = run.recorder.initial, ck["update_initial"]
        if not (isinstance(got, list) and len(got) == len(mine) and all(
                isinstance(g, torch.Tensor) and g.shape == m.shape for g, m in zip(got, mine))):
            raise bad(f"its update_initial is not {len(mine)} starting forms of shape {tuple(mine[0].shape)}"
                      if mine else "its update_initial is not this model's starting forms")
    why = _record_problem(ck)
    if why:
        raise bad(why)


def _whole(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _history_row(r: dict) -> bool:
    """Whether ``r`` is a history row as the loop writes it (the five columns of history.csv)."""
    return (_whole(r.get("step")) and r["step"] >= 0 and isinstance(r.get("quantity"), str)
            and _whole(r.get("layer")) and _whole(r.get("head"))
            and isinstance(r.get("value"), numbers.Real) and not isinstance(r.get("value"), bool))


def _record_problem(ck: dict) -> str | None:
    """What is wrong with the record a resumed run carries into its provenance (the time so far,
    its start, the machine of each segment), or None; a checkpoint from before a field was
    recorded has it missing, which is read as the resume's defaults."""
    from .provenance import stamp_problem

    elapsed = ck.get("elapsed")
    if elapsed is not None:
        if not isinstance(elapsed, dict) or set(elapsed) != {"wall", "cpu"}:
            return f"its elapsed time {str(elapsed)[:40]!r} is not a record of wall and cpu seconds"
        for k, v in elapsed.items():
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or v < 0:
                return f"its elapsed {k} seconds {v!r} are not a finite number >= 0"
    started = ck.get("started")
    if started is not None and stamp_problem(started):
        return f"its started {stamp_problem(started)}"
    sittings = ck.get("sittings")
    if sittings is not None:
        if not isinstance(sittings, list) or not all(isinstance(s, dict) for s in sittings):
            return f"its sittings {str(sittings)[:40]!r} are not a list of records"
        for i, s in enumerate(sittings):
            if s.get("started") is not None and stamp_problem(s["started"]):
                return f"its sittings[{i}].started {stamp_problem(s['started'])}"
    return None


def _load_state(part: str, load, state, out: Path) -> None:
    """``load(state)`` (a module's, optimiser's or schedule's ``load_state_dict``), its
    refusal in one line naming the checkpoint and the part."""
    try:
        load(state)
    except (RuntimeError, ValueError, KeyError, TypeError, IndexError, AttributeError) as err:
        why = " ".join(str(err).split())[:240]
        raise CompanionError(f"the checkpoint in {out} holds a {part} that does not fit this run's ({why}); "
                             "start the run again with --overwrite.") from None


def _config_diff(saved: dict, now: dict) -> str:
    keys = sorted(set(saved) | set(now))
    diff = [f"{k}: {saved.get(k)!r} -> {now.get(k)!r}" for k in keys if saved.get(k) != now.get(k)]
    return "; ".join(diff)


def _resume(run: _Run, ckpt_path: Path | None) -> dict:
    """Continue from the checkpoint at ``ckpt_path``: refused when it is missing, was
    trained on other data, by another configuration or by another number of processes;
    otherwise model, optimiser, schedule, every generator, history, step, the update
    recorder's start, the guard's seen blocks and the earlier segments' time are restored."""
    cfg, data, world = run.cfg, run.data, run.world
    if ckpt_path is None:   # it read 'no checkpoint to resume from at None'
        raise CompanionError("resume=True continues the run in a folder: give out_dir, the folder holding the run's "
                             "checkpoint.pt.")
    if not ckpt_path.exists():
        raise FileNotFoundError(f"no checkpoint to resume from at {ckpt_path}; run without resume first.")
    out = ckpt_path.parent
    ck = load_checkpoint(ckpt_path, run.device)
    if not isinstance(ck["config"], dict) or not isinstance(ck.get("data") or {}, dict):
        raise CompanionError(f"the checkpoint in {out} records no configuration or data of a run (its config is a "
                             f"{type(ck['config']).__name__}); start the run again with --overwrite.")
    saved_data = ck.get("data")
    if saved_data is not None and not _same_data(saved_data, _data_identity(data)):
        cut = (lambda v: str(v)[:16] if isinstance(v, str) else str(v)[:90])   # a hash, or a record
        diff = "; ".join(f"{k}: {cut(saved_data.get(k))} -> {cut(v)}"
                         for k, v in _data_identity(data).items() if k in saved_data and saved_data.get(k) != v)
        raise CompanionError(
            f"the checkpoint in {out} was trained on other data than this run reads ({diff}): the "
            "corpus, tokenizer or masking changed since. Resume with the same corpus and masking, or start again "
            "with --overwrite.")
    unknown = sorted(str(k) for k in ck["config"] if k not in cfg.to_dict())
    if unknown:   # no setting of this version can match them
        raise CompanionError(
            f"the checkpoint in {out} was written by another version of the package (it records the setting(s) "
            f"{', '.join(unknown)}, which this version does not have): resume it with the version that wrote it "
            "(update the package if that is a newer one), or start a new run directory.")
    if _with_defaults(ck["config"]) != cfg.to_dict():
        raise CompanionError(
            f"the checkpoint in {out} was written by a different configuration "
            f"({_config_diff(_with_defaults(ck['config']), cfg.to_dict())}); resume with the same settings "
            "or start a new run directory.")
    _check_contents(ck, run, out)
    states = ck["rng"]
    if len(states) != world:
        raise CompanionError(
            f"the checkpoint in {out} was written by {len(states)} process(es), this run "
            f"has {world}; resume with the same number of processes.")
    _load_state("model", run.model.load_state_dict, ck["model"], out)
    _load_state("optimizer state", run.opt.load_state_dict, ck["optimizer"], out)
    _load_state("schedule", run.sched.load_state_dict, ck["scheduler"], out)
    _load_state("generator state", lambda st: _set_rng_state(run.gens, st), states[run.rank], out)
    run.rows = ck["history"]
    run.start = ck["step"]
    if run.recorder is not None:  # the accumulated change keeps counting from the true start
        run.recorder.initial = ck["update_initial"]
    run.before = dict(ck.get("elapsed", {"wall": 0.0, "cpu": 0.0}))
    run.started = ck.get("started")
    # a checkpoint from before machines were recorded: its steps' machine is unknown
    run.sittings = list(ck.get("sittings") or [{"from_step": 0, "started": run.started, "device": "not recorded",
                                                 "cpu_model": "not recorded", "cpu_bf16_features": []}])
    if cfg.guard:
        run.seen = ck["seen"].to(torch.bool).cpu()
    return ck


def _checkpoint(run: _Run, ckpt_path: Path, done: int) -> None:
    """Write the checkpoint after ``done`` steps (rank 0; every rank hands over its
    generators): model, optimiser, schedule, generators, history, configuration, the data's
    identity, the update recorder's start, the guard's seen blocks and the time so far.
    Written beside ``ckpt_path``, then installed with its digest (:func:`_install_checkpoint`)."""
    _flush(run)
    states = _all_rng_states(run.gens, run.world)  # a collective: every rank takes part
    if run.rank != 0:
        return
    cfg = run.cfg
    from ...base.outputs import temp_beside

    ckpt_path.parent.mkdir(parents=True, exist_ok=True)
    with temp_beside(ckpt_path, "checkpoint") as tmp:   # new (O_EXCL): nothing at its name is followed
        _save_checkpoint({"model": run.model.state_dict(), "optimizer": run.opt.state_dict(),
                          "scheduler": run.sched.state_dict(), "rng": states, "history": run.rows,
                          "step": done, "config": cfg.to_dict(), "data": _data_identity(run.data),
                          "update_initial": run.recorder.initial if run.recorder is not None else None,
                          "started": run.started, "seen": run.seen if cfg.guard else None,
                          "elapsed": run.elapsed(), "sittings": run.sittings},
                         tmp, ckpt_path)
        _install_checkpoint(tmp, ckpt_path)


def kept_weights_path(out_dir, step: int) -> Path:
    """Where a run keeps its model weights at ``step`` (``TrainConfig.keep_weights``); a step
    that is no whole number >= 0 is refused (``int(2.5)`` named step 2's file)."""
    if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
        raise CompanionError(f"kept weights are named by a whole step >= 0, not {step!r}; give the step at which "
                             "the run kept them (its --keep-weights).")
    return Path(out_dir) / f"weights-step{int(step)}.safetensors"


def keep_weights(model, path: Path) -> Path:
    """Write the model's weights (float32 safetensors) atomically, with a SHA-256 beside it,
    so a later measurement (e.g. a guard in another mode) never needs the run again."""
    from safetensors.torch import save_file

    from ...base.cache import atomic_path

    from ...base.outputs import check_output, write_text_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    check_output(f"{path}.sha256", "kept weights' digest")   # refused before the weights are written
    state = {k: v.detach().float().cpu().clone().contiguous() for k, v in model.state_dict().items()}
    from safetensors import SafetensorError

    with atomic_path(path) as tmp:
        try:
            save_file(state, str(tmp))
        except SafetensorError as err:   # a full disk, wrapped in safetensors' own error type
            why = " ".join(str(err).split())[:160]
            raise CompanionError(f"cannot write the kept weights {path} ({why}): the disk is full or the folder is "
                                 "not writable; free some space and continue the run with --resume.") from None
    write_text_atomic(sha256_file(path) + "\n", f"{path}.sha256", what="kept weights' digest")
    return path

"""The checks of ``companion train``'s arguments against this machine, made before any work.

:mod:`companion.train.cli` calls them before it creates, locks or clears ``--out``, so that a
bad argument costs no run folder and no hours of training; each refuses in one line
(:class:`~companion.base.errors.CompanionError`) naming the argument and the fix:

``--device``   a device this machine can train on (:func:`check_device`);
``--log``      a regular file or one that can be created, never one of the run's own files
               nor the corpus it trains on (:func:`check_log`, :func:`check_log_target`);
``--out``      a folder or a free name, not the repository's registries, holding no run
               unless ``--resume`` or ``--overwrite`` says what to do with it, and writable
               at every name a run writes (:func:`check_out_kind`, :func:`check_not_registry`,
               :func:`prepare_out`);
``--corpus``   a local corpus file that is UTF-8 text (:func:`check_utf8`).

``RANK`` and ``WORLD_SIZE`` are checked where the process layout is read
(:func:`companion.train.runner.devices.process_layout`).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

__all__ = ["RUN_FILES", "KEPT_WEIGHTS", "check_device", "check_log", "check_log_target", "check_out_kind",
           "check_not_registry", "prepare_out", "check_run_files", "old_kept_weights", "check_utf8"]

#: the files of a run that --overwrite removes before the new run trains (with its kept weights)
RUN_FILES = ("history.csv", "provenance.json", "checkpoint.pt", "checkpoint.pt.sha256", "checkpoint.pt.sha256.pending")

#: the name of a run's kept weights (weights-stepN.safetensors) and of their digest
KEPT_WEIGHTS = re.compile(r"weights-step[0-9]+\.safetensors(\.sha256)?")


# ------------------------------------------------------------------- --device


def check_device(text: str | None) -> None:
    """Refuse a ``--device`` that names no device this machine can train on, before any work."""
    import torch

    from ...base.errors import CompanionError

    if text is None:
        return
    try:
        dev = torch.device(text)
    except (RuntimeError, ValueError):
        raise CompanionError(f"--device {text!r} is not a device; use cpu, cuda or cuda:N.") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise CompanionError(f"--device {text}: no CUDA GPU is visible on this machine; use --device cpu "
                                 "or leave --device out.")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise CompanionError(f"--device {text}: this machine has {torch.cuda.device_count()} GPU(s), "
                                 f"numbered from 0.")
    elif dev.type != "cpu":
        raise CompanionError(f"--device {text}: training runs on cpu or cuda, not {dev.type}.")


# ------------------------------------------------------------------- --log


def check_log(log: str | None, out: str | None = None) -> None:
    """``--log`` names a regular file, or one that can be created: a folder, a FIFO or a device
    is refused before --out is locked (a FIFO would block with --out held)."""
    from ...base.errors import CompanionError

    if not log:
        return
    path = Path(log)
    if path.is_symlink():
        raise CompanionError(f"--log {log} is a symbolic link, which is never followed; give the path of a "
                             "file to append progress lines to.")
    if path.exists() and not path.is_file():
        kind = "a folder" if path.is_dir() else "a FIFO" if stat.S_ISFIFO(path.stat().st_mode) else "not a regular file"
        raise CompanionError(f"--log {log} is {kind}; give the path of a file to append progress lines to.")
    made = out is not None and os.path.abspath(path.parent) == os.path.abspath(out)   # the run makes --out
    if not path.exists() and not path.parent.is_dir() and not made:
        raise CompanionError(f"--log {log}: its folder {path.parent} does not exist; create it or choose another path.")


def check_log_target(log: str | None, out: Path, cfg) -> None:
    """``--log`` is none of the run's own files in ``--out`` (its history, provenance, checkpoint,
    kept weights, lock) nor the local corpus file: progress lines appended there would make a
    killed run's folder read as finished, or change the text the run trains on."""
    from ...base.errors import CompanionError

    if not log:
        return
    path = Path(log)
    try:
        here = path.resolve()
        hit = here.name if here.parent == out.resolve() and KEPT_WEIGHTS.fullmatch(here.name) else None
    except (OSError, RuntimeError):
        hit = None
    hit = hit or next((n for n in (*RUN_FILES, ".train.lock") if _same_file(path, out / n)), None)
    if hit:
        raise CompanionError(f"--log {log} is the run's own {hit} in --out {out}; give the progress log a name of "
                             f"its own, such as {out / 'train.log'}.")
    corpus = Path(cfg.corpus)
    if corpus.is_file() and _same_file(path, corpus):
        raise CompanionError(f"--log {log} is the --corpus file itself, so progress lines would be appended to the "
                             "text the run trains on; give the log another path.")


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file: the same path once resolved, or one inode."""
    try:
        if a.resolve() == b.resolve():
            return True
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except (OSError, RuntimeError):
        return False


# ------------------------------------------------------------------- --out


def check_out_kind(out: Path) -> None:
    """``--out`` is a folder or a name still free: a file, a FIFO or a link to nothing there is
    named as what it is (it read 'cannot write ... (File exists)')."""
    from ...base.errors import CompanionError

    if out.is_symlink() and not out.exists():
        raise CompanionError(f"--out {out} is a symbolic link to nothing ({os.readlink(out)}); give the run's own "
                             "folder, or remove the link.")
    if out.exists() and not out.is_dir():
        mode = out.stat().st_mode
        kind = "a file" if stat.S_ISREG(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
        raise CompanionError(f"--out {out} is {kind}, not a folder; give the run's own folder, such as runs/my-run.")


def check_not_registry(out: Path) -> None:
    """``--out`` is a run's own folder: never the repository's root, its ``data/`` of
    registries (chapters.yaml, limits.yaml, ...) or ``data/runs/``, the catalogue of run
    folders, where history.csv and provenance.json would land among what is not a run (and
    ``--overwrite`` would remove them there); ``data/runs/NAME`` is a run's folder.  Only
    where the package runs from its repository (a pyproject.toml at its root)."""
    from ...base import paths
    from ...base.errors import CompanionError

    here = out.resolve()
    root, data = Path(paths.ROOT).resolve(), Path(paths.DATA_DIR).resolve()
    if not (root / "pyproject.toml").is_file():   # an installed package: no repository to keep
        return
    what = None
    if here == root:
        what = "the repository's root"
    elif here.is_relative_to(data):
        parts = here.relative_to(data).parts
        if not parts:
            what = "the repository's data/ folder of registries"
        elif parts[0] != "runs" or len(parts) < 2:
            what = "the repository's data/runs/ catalogue" if parts == ("runs",) else \
                f"a registry folder of the repository's data/ ({'/'.join(parts)})"
    if what is not None:
        raise CompanionError(f"--out {out} is {what}, not a run's own folder; give one such as data/runs/NAME "
                             "or a folder outside the repository.")


def prepare_out(out: Path, resume: bool, overwrite: bool, keep=()) -> bool:
    """Check ``out`` before any work; returns whether there is a checkpoint to resume.

    A folder that already holds a run (finished: ``history.csv``; interrupted:
    ``checkpoint.pt``) is refused unless ``--resume`` or ``--overwrite`` says what to do
    with it, and the folder must be writable (tested by writing a file), so that a bad
    ``--out`` fails now rather than after hours of training.
    """
    from ...base.errors import CompanionError

    for name in RUN_FILES:   # a folder, FIFO or link of that name is not the tool's (nor a finished run)
        p = out / name
        try:
            mode = os.lstat(p).st_mode
        except OSError:
            continue
        also = "; --overwrite replaces only the run's own files" if overwrite else ""
        if stat.S_ISLNK(mode):
            raise CompanionError(f"{p} is a symbolic link (to {os.readlink(p)}), which a run never follows or "
                                 f"replaces{also}. Remove the link, or choose another --out.")
        if not stat.S_ISREG(mode):
            kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
            raise CompanionError(f"{p} is {kind}, not a file a run writes{also}. Move it away, or choose "
                                 "another --out.")
    finished = (out / "history.csv").exists()
    ckpt = (out / "checkpoint.pt").exists()
    if overwrite and resume:
        raise CompanionError("--resume and --overwrite contradict each other; choose one.")
    if finished and resume and not ckpt:
        raise CompanionError(f"{out} holds a finished run (history.csv, no checkpoint); nothing "
                             "to resume. Use another --out, or --overwrite to train it again.")
    if (finished or ckpt) and not (resume or overwrite):
        what = "a finished run" if finished else "an interrupted run (checkpoint.pt)"
        raise CompanionError(f"{out} already holds {what}; pass --resume to continue it, "
                             "--overwrite to replace it, or choose another --out.")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise CompanionError(f"cannot write to --out {out} ({err.strerror or err}); choose a "
                             "writable folder.") from err
    check_run_files(out, keep)   # --overwrite: the old run's files go once the new run's data is read
    return False if overwrite else ckpt


def check_run_files(out: Path, keep=()) -> None:
    """Every file a run writes into ``out`` (its kept weights included) is checked now, and
    the folder probed with a new file: a symbolic link out of ``out``, a FIFO (which would
    block the run for ever) or a folder at one of those names is refused before any work,
    in one line, rather than at the step that writes it."""
    from ...base.outputs import check_output, check_writable
    from .checkpoints import kept_weights_path

    names = ["history.csv", "provenance.json", "checkpoint.pt", "checkpoint.pt.sha256",
             "checkpoint.pt.sha256.pending"]
    for step in keep or ():
        w = kept_weights_path(out, step).name
        names += [w, f"{w}.sha256"]
    for name in names:
        check_output(out / name, "run file")
    check_writable(out / "history.csv", "run file")


def old_kept_weights(out: Path) -> list:
    """The kept weights (and digests) of the run in ``out``: files, or links, never a folder."""
    try:
        entries = list(out.iterdir())
    except OSError:
        return []
    return [p for p in entries if KEPT_WEIGHTS.fullmatch(p.name) and (p.is_symlink() or not p.is_dir())]


# ------------------------------------------------------------------- a local --corpus file


def check_utf8(path: Path) -> None:
    """A local corpus file is UTF-8 text: checked in blocks before --out is made (the run reads
    it later); a bad byte is named at its offset in the file."""
    import codecs

    from ...base.errors import CompanionError

    decoder, offset, pending = codecs.getincrementaldecoder("utf-8")(), 0, 0
    try:
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                pending = len(decoder.getstate()[0])   # bytes of a character the last block began
                decoder.decode(block)
                offset += len(block)
            pending = len(decoder.getstate()[0])
            decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:   # exc.object: the pending bytes, then the block
        base = offset - pending
        where = base + exc.start if exc.start < len(exc.object) else offset
        bad = exc.object[exc.start] if exc.start < len(exc.object) else None
        kind = "paragraphs" if path.suffix == ".txt" else "records"
        raise CompanionError(f"the corpus {path} is not UTF-8 text ({f'byte {bad:#04x} ' if bad is not None else ''}"
                             f"at offset {where:,}); give a UTF-8 {path.suffix} file of {kind}.") from None
    except OSError as exc:
        raise CompanionError(f"cannot read the corpus {path}: {exc.strerror or exc}.") from None

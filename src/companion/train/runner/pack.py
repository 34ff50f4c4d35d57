"""Several training runs packed on one device, in priority order, inside a deadline.

A BERT-Mini step is too small to fill a GPU: one run is bound by its host process (Python,
kernel launches), so N runs as N processes, one CPU thread each, share one GPU almost for
free up to the host's cores.  This module starts the runs of a jobs file as such processes
and watches their progress lines (``step S/T ... elapsed Es``, written by
``companion.train.cli``):

- runs start in the file's order (the plan's order: the first lines matter most), at most
  ``parallel`` at a time;
- from each run's last two progress lines it projects when the run will finish; when some
  run is projected to miss the deadline, the *last* running run in the file's order is
  stopped (and no queued run is started), then the projection is read again after a grace
  period, so a command that is too short still yields its first runs whole;
- at the deadline every run still going is stopped.

A stopped run is reported as such and never counts as finished: only a run whose process
exited 0 with a ``history.csv`` is ``finished``.  ``pack_summary.json`` in the output
folder records, per run, its status, the steps it reached and its seconds per step.

Command line::

    python -m companion.train.runner.pack JOBS --out DIR [--parallel N] [--deadline SECONDS]

where each non-blank line of JOBS that does not start with ``#`` is ``NAME ARGS...``: the
run's folder name under DIR and its ``companion train`` options (without ``--out``); a ``#``
that starts a word outside quotes begins a comment, as in a shell.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...base.errors import CompanionError
from ...base.outputs import check_output, open_stream, write_text_atomic

PROGRESS = re.compile(r"step (\d+)/(\d+) .*elapsed (\d+(?:\.\d+)?)s")
NAME = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._-]*$")   # no leading '-': '--out -x' reads as an option


@dataclass
class Job:
    """One run: its folder name and its ``companion train`` options (no ``--out``)."""
    name: str
    args: list[str]
    status: str = "queued"      # queued | running | finished | failed | stopped
    reason: str = ""
    started_at: float | None = None   # time.monotonic()
    ended_at: float | None = None
    progress: list[tuple[int, int, float]] = field(default_factory=list)  # (step, total, elapsed)
    proc: subprocess.Popen | None = None
    log_from: int = 0   # where this run's lines start in NAME.log (an earlier pack's lines are kept before)

    def seconds_per_step(self) -> float | None:
        """From the last two progress lines (None before there are two after step 0)."""
        pts = [p for p in self.progress if p[0] > 0]
        if len(pts) < 2 or pts[-1][0] == pts[-2][0]:
            return None
        (s0, _, t0), (s1, _, t1) = pts[-2], pts[-1]
        return (t1 - t0) / (s1 - s0)

    def projected_finish(self, now: float) -> float | None:
        """Seconds from ``now`` until the run's last step, at its latest pace (None: no pace yet)."""
        rate = self.seconds_per_step()
        if rate is None:
            return None
        step, total, _ = self.progress[-1]
        return (total - step) * rate


def parse_jobs(text: str) -> list[Job]:
    """Jobs of a jobs file; refused with the line's number when a line names no run, a name
    is not a plain folder name, a name repeats, or a line sets ``--out`` itself."""
    jobs: list[Job] = []
    seen: set[str] = set()
    for i, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            parts = shlex.split(_without_comment(line))
        except ValueError as err:   # an unclosed quote
            raise CompanionError(f"jobs line {i}: {err} ({line[:60]!r}); close the quote or remove it.") from None
        name, args = parts[0], parts[1:]
        if not NAME.match(name) or set(name) <= {"."}:   # '..' would be OUT's parent, '.' OUT itself
            raise CompanionError(f"jobs line {i}: run name {name!r} must be a plain folder name "
                                 "(letters, digits, '.', '_', '-'; not starting with '-'; not '.' or '..').")
        if name.endswith(".log") or name == "pack_summary.json":
            raise CompanionError(f"jobs line {i}: run name {name!r} is the name of a file the packer writes "
                                 "(each run's NAME.log, pack_summary.json); choose another name.")
        if name in seen:
            raise CompanionError(f"jobs line {i}: run name {name!r} appears twice; each run needs its own folder.")
        if not args:
            raise CompanionError(f"jobs line {i}: run {name!r} has no training options; "
                                 "write NAME followed by its companion train options.")
        if any(a == "--out" or a.startswith("--out=") for a in args):
            raise CompanionError(f"jobs line {i}: run {name!r} sets --out; the packer puts each run in "
                                 "OUT/NAME, so leave --out off the line.")
        seen.add(name)
        jobs.append(Job(name, args))
    if not jobs:
        raise CompanionError("the jobs file names no run; write one 'NAME OPTIONS...' line per run.")
    return jobs


def _without_comment(line: str) -> str:
    """``line`` up to a ``#`` that starts a word outside quotes (a comment, as in a shell): a
    ``#`` inside a word (``run#3``) or in quotes stays.  (``shlex``'s own comments cut ``run#3``.)"""
    quote, escaped = None, False
    for i, ch in enumerate(line):
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def check_fits(n_runs: int, bytes_per_run: int, free_bytes: int, where: str) -> None:
    """Refuse, before any step, more runs at once than the device's free memory holds."""
    if n_runs * bytes_per_run > free_bytes:
        fit = max(free_bytes // max(bytes_per_run, 1), 0)
        raise CompanionError(
            f"{n_runs} runs at once need about {n_runs * bytes_per_run / 2**30:.1f} GiB on {where}, "
            f"which has {free_bytes / 2**30:.1f} GiB free; pass --parallel {fit} or fewer.")


def choose_to_stop(running: list[Job], remaining_s: float) -> Job | None:
    """The run to stop now, or None: the last running run in the file's order, when some
    running run is projected to finish after the deadline and more than one is running."""
    if len(running) < 2:
        return None
    late = [j for j in running if (p := j.projected_finish(0.0)) is not None and p > remaining_s]
    return running[-1] if late else None


def _read_progress(job: Job, log: Path) -> None:
    """The run's progress from its own lines of ``log`` (those after ``job.log_from``)."""
    try:
        with open(log, "rb") as fh:
            fh.seek(job.log_from)
            text = fh.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return
    job.progress = [(int(a), int(b), float(c)) for a, b, c in PROGRESS.findall(text)]


def _stop(job: Job, reason: str) -> None:
    if job.proc is not None and job.proc.poll() is None:
        try:
            os.killpg(job.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            job.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(job.proc.pid, signal.SIGKILL)
            job.proc.wait()
    job.status, job.reason, job.ended_at = "stopped", reason, time.monotonic()


def _check_out_folder(out: Path) -> None:
    """``--out`` names a folder, or a name still free: a file, FIFO or link to nothing there is
    named as what it is (it was a FileExistsError's traceback)."""
    if out.is_symlink() and not out.exists():
        raise CompanionError(f"--out {out} is a symbolic link to nothing; give a folder for the runs, or remove the link.")
    if out.exists() and not out.is_dir():
        kind = "a file" if out.is_file() else "a FIFO, device or socket"
        raise CompanionError(f"--out {out} is {kind}, not a folder; give a folder for the runs.")


def _read_jobs(path: Path) -> str:
    """The jobs file's text, refused in one line naming it when it is not UTF-8."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")   # a BOM (Notepad's UTF-8) is no part of the first run's name
    except UnicodeDecodeError as exc:
        raise CompanionError(f"jobs file {path} is not UTF-8 text (byte {data[exc.start]:#04x} at offset "
                             f"{exc.start}); write it as UTF-8, one 'NAME OPTIONS...' line per run.") from None


def run_packed(jobs: list[Job], out: Path, parallel: int, deadline_s: float, python: str = sys.executable,
               poll_s: float = 2.0, grace_s: float = 30.0, echo=print) -> dict:
    """Run ``jobs`` (in order of priority) as processes under ``out``; see the module's docstring."""
    if parallel < 1:
        raise CompanionError(f"--parallel must be >= 1; got {parallel}.")
    if not (isinstance(deadline_s, (int, float)) and math.isfinite(deadline_s) and deadline_s > 0):
        raise CompanionError(f"--deadline must be a positive number of seconds; got {deadline_s}"
                             " (a NaN or infinite deadline would never stop a run).")
    _check_out_folder(out)
    taken = [j.name for j in jobs if (out / j.name / "history.csv").exists()]
    if taken:
        raise CompanionError(f"{out} already holds finished runs {', '.join(taken)}; "
                             "choose another --out or leave those runs out of the jobs file.")
    out.mkdir(parents=True, exist_ok=True)
    for name in [f"{j.name}.log" for j in jobs] + ["pack_summary.json"]:   # before any run starts
        check_output(out / name, "pack output")
    t0 = time.monotonic()   # the deadline by the monotonic clock: a system clock set back (or on) never moves it
    last_stop = -1e9
    closed = False  # once a run was stopped for the deadline, no queued run starts
    while True:
        now = time.monotonic()
        for j in jobs:
            if j.status == "running":
                _read_progress(j, out / f"{j.name}.log")
                rc = j.proc.poll()
                if rc is not None:
                    j.ended_at = now
                    done = rc == 0 and (out / j.name / "history.csv").exists()
                    j.status = "finished" if done else "failed"
                    j.reason = "" if done else f"exit status {rc} (see {j.name}.log)"
                    echo(f"{j.status} {j.name} after {now - t0:.0f}s {j.reason}".rstrip())
        running = [j for j in jobs if j.status == "running"]
        remaining = deadline_s - (now - t0)
        if remaining <= 0:
            for j in running:
                _stop(j, "the deadline passed")
                echo(f"stopped {j.name}: the deadline passed")
            break
        if now - last_stop >= grace_s and (victim := choose_to_stop(running, remaining)) is not None:
            _stop(victim, f"projected to miss the deadline with {len(running)} runs packed")
            echo(f"stopped {victim.name}: {victim.reason}")
            last_stop, closed = now, True
            continue
        queued = [j for j in jobs if j.status == "queued"]
        if closed and queued:
            for j in queued:
                j.status, j.reason = "stopped", "not started: the deadline could not be met"
            queued = []
        while queued and len(running) < parallel:
            j = queued.pop(0)
            cmd = [python, "-m", "companion.train.cli", *j.args, "--out", str(out / j.name)]
            # appended to: a log of an earlier pack into this folder (a stopped run's only record) is kept
            log = open_stream(out / f"{j.name}.log", "run log", mode="a")
            j.log_from = os.fstat(log.fileno()).st_size
            j.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            log.close()
            j.status, j.started_at = "running", now
            running.append(j)
            echo(f"started {j.name}")
        if not running and not queued:
            break
        time.sleep(poll_s)
    summary = {"deadline_s": deadline_s, "parallel": parallel, "wall_s": round(time.monotonic() - t0, 1),
               "runs": [{"name": j.name, "status": j.status, "reason": j.reason,
                         "steps": j.progress[-1][0] if j.progress else 0,
                         "total": j.progress[-1][1] if j.progress else None,
                         "seconds_per_step": _seconds_per_step(j.progress),
                         "wall_s": round((j.ended_at or time.monotonic()) - j.started_at, 1) if j.started_at else None}
                        for j in jobs]}
    write_text_atomic(json.dumps(summary, indent=1), out / "pack_summary.json", what="pack summary")
    return summary


def _seconds_per_step(progress: list[tuple[int, int, float]]) -> float | None:
    """A run's seconds per step from its progress lines ``(step, total, elapsed)``: its elapsed
    seconds over its steps where its lines start at step 0; for a resumed run (its clock starts at
    the resume, its steps count from the run's start) the seconds between its first and last lines
    over the steps between them, None with one line (elapsed / step read a segment's seconds over
    every step of the run)."""
    if not progress or not progress[-1][0]:
        return None
    (s0, _, e0), (s1, _, e1) = progress[0], progress[-1]
    if s0 == 0:
        return e1 / s1
    return (e1 - e0) / (s1 - s0) if s1 > s0 else None


def _device_memory(device: str) -> tuple[int, str] | None:
    if not device.startswith("cuda"):
        return None
    import torch

    if not torch.cuda.is_available():
        raise CompanionError("--device cuda: no GPU is visible here; pack on --device cpu or run where a GPU is.")
    free, _ = torch.cuda.mem_get_info()
    return free, torch.cuda.get_device_name()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m companion.train.runner.pack", description=__doc__.split("\n\n")[0])
    p.add_argument("jobs", help="jobs file: one 'NAME OPTIONS...' line per run, most important first")
    p.add_argument("--out", required=True, help="folder for the runs (OUT/NAME) and pack_summary.json")
    p.add_argument("--parallel", type=int, default=os.cpu_count() or 1,
                   help="runs at once (default: the host's cores)")
    p.add_argument("--deadline", type=float, default=540.0, help="seconds until every run still going is stopped")
    p.add_argument("--device", default="cpu", help="where the runs train (for the memory check before any step)")
    p.add_argument("--gib-per-run", type=float, default=2.0,
                   help="device memory one run needs (GiB; BERT-Mini with a CUDA context is well under 2)")
    a = p.parse_args(argv)
    if not (math.isfinite(a.gib_per_run) and a.gib_per_run > 0):
        p.error(f"--gib-per-run must be a positive number of GiB; got {a.gib_per_run}.")
    try:
        path = Path(a.jobs)
        if not path.exists():
            raise CompanionError(f"jobs file {a.jobs!r} does not exist; write one 'NAME OPTIONS...' line per run.")
        from ...base.paths import regular_file

        regular_file(path, "jobs file")   # a folder or FIFO is named as what it is (it read 'does not exist')
        jobs = parse_jobs(_read_jobs(path))
        mem = _device_memory(a.device)
        if mem is not None:
            check_fits(min(a.parallel, len(jobs)), int(a.gib_per_run * 2**30), mem[0], mem[1])
        if not a.out.strip():   # Path("") is the working folder
            raise CompanionError("--out is empty (an unset variable?); give the folder for the runs, such as "
                                 "runs/pack.")
        run_packed(jobs, Path(a.out), a.parallel, a.deadline)
    except CompanionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Where and how the book was executed: the facts behind its status page.

:func:`build_facts` reads them at build time (nothing is typed): the package version and
the commit, the build date, the device and run size the chapters execute with, the
versions of Python, PyTorch and transformers.  :func:`cached_run_sets` summarises the
cached training runs under ``data/runs`` by set (the run name up to its mode), with the
device each set was trained on, from the runs' own provenance files.
:func:`gpu_size_budget` gives each chapter's time at the ``gpu`` size: measured on an H100
where a device was lent (an H100 run that did not reach its end is shown as not measured,
with the reason, and estimated), estimated for a T4-class card by a model of the card (a
host part measured on two CPU cores plus the live training's steps at the T4's modelled
seconds per step, :func:`companion.book.budgets.colab_budget.t4_step_seconds`), measured on
two CPU cores (estimated for a chapter that trains live and was not timed at its current
size), and what the T4 saves over the two CPU cores.  The book's
``build-status`` directive (:mod:`companion.book.sphinxext`) renders both; myst-nb's
``nb-exec-table`` adds each chapter's execution time and status.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import time
from pathlib import Path
from ...base.paths import ROOT

__all__ = ["build_facts", "cached_run_sets", "device_kind", "git_commit", "gpu_size_budget", "BUDGET_HEADS"]



def git_commit(root: Path | str = ROOT) -> str:
    """``<short hash>`` (``+ local changes`` when the tree differs), else ``$GITHUB_SHA``."""
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, check=True,
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        return sha + (" + local changes" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return os.environ.get("GITHUB_SHA", "unknown")[:12] or "unknown"


def build_facts(root: Path | str = ROOT) -> dict[str, str]:
    """The facts of this build, as display strings in a fixed order."""
    import torch
    import transformers

    from ... import __version__
    from ...base.runtime import describe_device, run_size

    return {
        "built (UTC)": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "commit": git_commit(root),
        "companion": __version__,
        "chapters executed on": describe_device(),
        "run size": f"{run_size()} (COMPANION_RUN_SIZE)",
        "Python / PyTorch / transformers": (f"{platform.python_version()} / {torch.__version__} / "
                                            f"{transformers.__version__}"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores",
    }


_MODE = re.compile(r"-(encoder|decoder|authors-decoder)-.*$")

#: what the name of a GPU (``torch.cuda.get_device_name``) holds: a vendor, a product line or
#: a data-centre part number; a device named otherwise (``unknown``, ``?``, a TPU) is not
#: taken for a GPU
_GPU_NAME = re.compile(r"nvidia|tesla|geforce|quadro|titan|\brtx\b|\bamd\b|radeon|instinct|\bgpu\b|\bcuda\b|"
                       r"\b(?:a|h|l|t|v|p|k|b|gh)\d{1,3}\b", re.IGNORECASE)


#: what names a processor (``cpu (1 threads)``, ``AMD EPYC 7B13``, ``Intel(R) Xeon(R) CPU``): a
#: CPU, though AMD and Intel make GPUs too
_CPU_NAME = re.compile(r"\bcpu\b|\bepyc\b|\bxeon\b|\bryzen\b|\bthreadripper\b|\bopteron\b|core\(tm\)|"
                       r"\bprocessor\b|\bneoverse\b|\bgraviton\b|"
                       # Arm's cores are named with a letter and digits, as GPUs are (Cortex-A72, A76)
                       r"\bcortex\b|\baarch64\b|\barmv\d|\bx86(?:[_-]64)?\b", re.IGNORECASE)


def device_kind(device) -> str:
    """``"CPU"``, ``"GPU"`` or ``"unrecorded"`` for the device a run's provenance names
    (``hardware.device``, or ``hardware`` given as text): a missing, empty, unsure (``?``) or
    unrecognised device is never counted as a GPU, nor a processor's name (``AMD EPYC``)."""
    if not isinstance(device, str) or not device.strip():
        return "unrecorded"
    if re.search(r"\btpu\b|\bmps\b|unknown|not recorded|\?", device, re.IGNORECASE):
        return "unrecorded"
    if device.strip().lower().startswith("cpu") or _CPU_NAME.search(device):
        return "CPU"
    return "GPU" if _GPU_NAME.search(device) else "unrecorded"


def _kinds(kinds: set) -> str:
    known = [k for k in ("CPU", "GPU") if k in kinds]
    text = " and ".join(known) if known else "unrecorded"
    return text + (" (and an unrecorded device)" if known and "unrecorded" in kinds else "")


def _whole(value):
    """``value`` as a non-negative whole number, or None where it is not one (null, text, a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0 \
            or value in (float("inf"),) or int(value) != value:
        return None
    return int(value)


def cached_run_sets(runs: Path | str | None = None) -> list[dict]:
    """One row per set of cached runs: name, finished runs, kind of device (``CPU``, ``GPU``,
    ``CPU and GPU``; a device the provenance does not name or that is no known GPU reads
    ``unrecorded``, never ``GPU``), device(s), steps (``not recorded`` where a run's
    provenance gives none), total hours of the runs that recorded their time, and how many
    runs did not (a missing, negative, infinite or non-numeric ``duration_s``): their time is
    not in ``hours``.

    A run counts when its folder holds ``history.csv`` (the mark of a finished run) and
    ``provenance.json``, read by :func:`companion.train.runner.runs.read_provenance` (a file
    that is not such a record is refused in one line naming it).
    """
    from ...train.runner.runs import read_provenance

    runs = Path(runs) if runs is not None else ROOT / "data" / "runs"
    sets: dict[str, dict] = {}
    for prov in sorted(runs.glob("*/provenance.json")):
        if not (prov.parent / "history.csv").exists():
            continue
        meta = read_provenance(prov.parent)
        name = _MODE.sub("", prov.parent.name) or prov.parent.name
        row = sets.setdefault(name, {"set": name, "runs": 0, "devices": set(), "kinds": set(), "steps": set(),
                                     "hours": 0.0, "unrecorded": 0, "corpus": set()})
        hardware = meta.get("hardware")
        device = hardware.get("device") if isinstance(hardware, dict) else hardware
        config = meta.get("config") if isinstance(meta.get("config"), dict) else {}
        row["runs"] += 1
        row["devices"].add(device.strip() if isinstance(device, str) and device.strip() else "not recorded")
        row["kinds"].add(device_kind(device))
        steps = _whole(config.get("steps"))
        row["steps"].add("not recorded" if steps is None else steps)
        row["corpus"].add(str(config.get("corpus", "?")))
        seconds = meta.get("duration_s")
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and 0 <= seconds < float("inf"):
            row["hours"] += float(seconds) / 3600
        else:   # counted apart, so that a sum over fewer runs is not read as the set's whole time
            row["unrecorded"] += 1
    out = []
    for row in sets.values():
        out.append({"set": row["set"], "runs": row["runs"], "kind": _kinds(row["kinds"]),
                    "devices": ", ".join(sorted(row["devices"])),
                    "corpus": ", ".join(sorted(row["corpus"])),
                    "steps": ", ".join(str(s) for s in sorted(row["steps"], key=lambda s: (isinstance(s, str), str(s).zfill(12)))),
                    "hours": _hours(row["hours"]), "runs without a recorded time": row["unrecorded"]})
    return out


def _hours(h: float) -> float:
    """``h`` hours to two decimals; a time that is not zero but rounds to 0.00 (runs of a few
    seconds) keeps two significant digits, so the table never says a set took no time."""
    return round(h, 2) if h == 0 or round(h, 2) != 0 else float(f"{h:.2g}")


BUDGET_HEADS = ["chapter", "dominant cost", "H100 s", "T4 s (estimate)",
                "CPU s (2 cores)", "T4 vs CPU", "flags"]


def gpu_size_budget(times=None) -> tuple[list[dict], str]:
    """Rows of the status page's gpu-size table (:data:`BUDGET_HEADS`, display strings) and
    the sentence that says how the T4 column is estimated
    (:func:`companion.book.budgets.colab_budget.colab_estimates`).

    ``times``: the recorded timings (default: ``data/chapter_times/``).
    """
    from ..budgets import colab_budget as cb
    from ..budgets.colab_budget import (CPU_RULE, RULE, T4_FP32_SHARE, T4_FP32_TFLOPS, budget_words,
                                        colab_estimates, load_step_seconds, step_flops, t4_step_seconds)
    from ..budgets.live_runs import LIVE_RUNS

    table = colab_estimates(times)
    rows = []
    for _, r in table.iterrows():
        cpu = f"{r['cpu']} (estimated)" if r["cpu_source"] == "estimated" else r["cpu"]
        rows.append(dict(zip(BUDGET_HEADS, [r["chapter"], r["dominant_cost"].replace("_", "-"),
                                            r["h100"], r["t4"], cpu, r["t4_vs_cpu"], r["flags"] or "none"])))
    # how far the model's one assumption carries: the live chapters at a tenth of the T4's peak
    slow_step = t4_step_seconds(share=0.1)
    slow = colab_estimates(times, t4_step_s=slow_step).set_index("chapter")["t4_s"]
    live = [c for c in LIVE_RUNS if c in slow.index and slow[c] == slow[c]]
    worst = max(live, key=lambda c: slow[c]) if live else None
    sensitivity = (f" At a tenth of that peak a step would take {slow_step:.3f} s and the longest "
                   f"live chapter, {worst}, {cb._seconds(slow[worst], mark=cb.T4_BUDGET_S)} s." if worst else "")
    rule = (f"{RULE} By the model a BERT-Mini step ({step_flops():.3g} FLOPs, counted in "
            f"bench/results/bert_mini_step_flops.json) takes {t4_step_seconds():.3f} s on a T4 "
            f"against {load_step_seconds():.3f} s measured on the H100, the T4 sustaining "
            f"{T4_FP32_SHARE:.0%} of the T4's FP32 peak ({T4_FP32_TFLOPS} TFLOPS).{sensitivity} "
            "T4 vs CPU: how many times faster the notebook runs on a T4 than on two CPU cores; "
            "'none (host work)' where the chapter trains nothing live, so a GPU runtime does not "
            "shorten it. An H100 run that did not reach its end (a zoo wheel not carried to that "
            "machine) is shown as not measured, with the reason, and its time estimated. "
            f"Budget: {budget_words(cb.T4_BUDGET_S, long=True)} per chapter on a T4, "
            f"{budget_words(cb.H100_BUDGET_S, long=True)} on an H100 (data/limits.yaml); the flags name the chapters "
            f"over either, and those whose H100 time is estimated rather than measured. {CPU_RULE}")
    return rows, rule

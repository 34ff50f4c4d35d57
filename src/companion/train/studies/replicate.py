"""What the device changes: the blind matrix's runs repeated on the other device.

The blind matrix (data/runs/blind_plan.md) was trained on two devices: seeds 10-11 of the
encoder/decoder pair on a CPU, every other run on one GPU.  Its addendum fixed, before any
of their numbers was read, two replicates that are never judged: the CPU's seeds 10-11 again
on the GPU (``blind-gpu-replicate-*``) and seed 12's pair again on the CPU
(``blind-cpu-replicate-*``).  Same seed, same initial weights, same data order, same
held-out blocks: whatever differs is the device (bf16 kernels, reduction order).

:func:`device_differences` pairs each replicate with the judged run of the same arm and seed
and returns the differences at chosen steps; :func:`device_effect_summary` sets them
against the seed spread of the judged runs and, for the paired claims, against the change
the device makes to the encoder-minus-decoder effect itself.
"""
from __future__ import annotations

import pandas as pd

from .evidence import arm_values, load_patterns, run_device
from ..runner.runs import load_runs

JUDGED = "blind-wiki-bert-mini-*"
REPLICATES = ("blind-gpu-replicate-wiki-bert-mini-*", "blind-cpu-replicate-wiki-bert-mini-*")
QUANTITIES = ("eval_loss", "symmetry", "directionality")


def _device(run: str) -> str:
    """``cpu`` or ``gpu``; a run whose provenance records no device cannot stand in a device
    comparison and is refused by name."""
    from ...base.errors import CompanionError
    from .evidence import UNRECORDED

    dev = run_device(run)
    if dev == UNRECORDED:
        raise CompanionError(f"run {run}: its provenance records no device, so it cannot stand in a device "
                             "replicate; rerun it (training records the device) or move it out of data/runs.")
    return "cpu" if dev == "CPU" else "gpu"


#: the replicates the blind plan fixed (its addenda): name prefix, the device they run on,
#: the judged runs' device, the seeds, and the command that makes them
PLANNED = (
    ("blind-gpu-replicate-wiki-bert-mini", "gpu", "cpu", (10, 11),
     "SET=replicate bash data/runs/device_blind_matrix.sh (on a GPU machine)"),
    ("blind-cpu-replicate-wiki-bert-mini", "cpu", "gpu", (12,),
     "bash data/runs/make_blind_runs.sh replicate"),
)
ARMS = ("encoder-standard", "decoder-standard")


def replicate_directions(folder=None) -> pd.DataFrame:
    """One row per planned replicate run: its direction (``cpu -> gpu``: a run the CPU made,
    again on the GPU), seed, arm, whether it has landed (its ``history.csv`` in data/runs) and
    the command that makes it."""
    from ...base.paths import ROOT

    folder = ROOT / "data" / "runs" if folder is None else folder
    rows = []
    for prefix, on, judged_on, seeds, command in PLANNED:
        for seed in seeds:
            for arm in ARMS:
                run = f"{prefix}-{arm}-s{seed}"
                rows.append({"run": run, "direction": f"{judged_on} -> {on}", "seed": seed, "arm": arm,
                             "landed": (folder / run / "history.csv").is_file(), "command": command})
    return pd.DataFrame(rows)


def directions_text(folder=None) -> str:
    """Each direction in words, landed or missing with its command: the device effect is
    measured both ways only when both have landed."""
    d = replicate_directions(folder)
    words = {"cpu -> gpu": "CPU runs repeated on the GPU", "gpu -> cpu": "GPU runs repeated on the CPU"}
    parts = []
    for direction, g in d.groupby("direction", sort=False):
        seeds = ", ".join(str(s) for s in sorted(set(g["seed"])))
        what = f"{words[direction]} (seed{'s' if g['seed'].nunique() > 1 else ''} {seeds})"
        if g["landed"].all():
            parts.append(f"{what}: landed")
        else:
            n = int((~g["landed"]).sum())
            parts.append(f"{what}: {n} of {len(g)} runs still missing, made by {g['command'].iloc[0]}")
    return "; ".join(parts)


CPU_MACHINE_CHECK = "cpu_machine_check/blind-wiki-bert-mini-encoder-standard-s10-step250.csv"


def cpu_machine_check(path=None, step: int = 250, seeds=(10, 11, 12, 13, 14)) -> pd.DataFrame:
    """The stored CPU run of seed 10 (encoder, standard start) against the same first
    ``step`` steps made again on another CPU machine, with today's code and with the run's own
    code (data/runs/cpu_machine_check).  One row per quantity (the losses, the layer-mean
    scores, as the verdicts read them): the three values, ``machine`` (other machine minus the
    stored run, today's code), ``code`` (today's code minus the run's own, on the one machine)
    and the judged body's seed spread at that step for the arm."""
    from ...base.errors import CompanionError
    from ...base.paths import ROOT

    path = ROOT / "data" / "runs" / CPU_MACHINE_CHECK if path is None else path
    if not path.is_file():
        raise CompanionError(f"no CPU machine check at {path}; its README beside it gives the commands.")
    t = pd.read_csv(path)
    today, own = "this_machine_todays_code", "this_machine_runs_own_code"
    judged = load_runs(pattern=JUDGED)
    judged = judged[judged["seed"].isin(seeds)]
    rows = []
    for q in ("eval_loss", "train_loss", "symmetry", "directionality"):
        vals = {}
        for col in ("stored_run", today, own):
            frame = t.rename(columns={col: "value"}).assign(run=col, mode="encoder", init="standard", seed=10)
            vals[col] = float(arm_values(frame, q, "encoder", "standard", step=step).iloc[0])
        rows.append({"quantity": q, "step": step, "stored run": vals["stored_run"],
                     "other machine": vals[today], "other machine, the run's code": vals[own],
                     "machine": vals[today] - vals["stored_run"], "code": vals[today] - vals[own],
                     "seed_sd": float(arm_values(judged, q, "encoder", "standard", step=step,
                                                 non_finite="raise").std(ddof=1))})
    return pd.DataFrame(rows)


def _replicates() -> pd.DataFrame | None:
    return load_patterns(REPLICATES)


def device_differences(steps=(2000, 5000, 10000)) -> pd.DataFrame:
    """One row per replicate, quantity and step: the judged run's value, the replicate's,
    their devices and ``replicate - judged`` (layer means for the structure scores).
    Empty when no replicate is cached."""
    reps = _replicates()
    cols = ["mode", "init", "seed", "quantity", "step", "judged_device", "replicate_device",
            "judged", "replicate", "difference"]
    if reps is None:
        return pd.DataFrame(columns=cols)
    judged = load_runs(pattern=JUDGED)
    rows = []
    for (mode, init, seed, run), _ in reps.groupby(["mode", "init", "seed", "run"]):
        base = judged[(judged["mode"] == mode) & (judged["init"] == init) & (judged["seed"] == seed)]
        if base.empty:
            continue
        rep = reps[reps["run"] == run]
        for q in QUANTITIES:
            for step in steps:
                a = arm_values(base, q, mode, init, step=step)
                b = arm_values(rep, q, mode, init, step=step)
                if a.empty or b.empty:
                    continue
                rows.append({"mode": mode, "init": init, "seed": int(seed), "quantity": q, "step": int(step),
                             "judged_device": _device(base["run"].iloc[0]), "replicate_device": _device(run),
                             "judged": float(a.iloc[0]), "replicate": float(b.iloc[0]),
                             "difference": float(b.iloc[0] - a.iloc[0])})
    return pd.DataFrame(rows, columns=cols)


def device_effect_summary(steps=(2000, 5000, 10000), seeds=(10, 11, 12, 13, 14)) -> pd.DataFrame:
    """Per arm, quantity and step: the largest |replicate - judged| over the replicated seeds
    beside the standard deviation over ``seeds`` of the judged runs (the seed spread the
    verdicts are judged against), and their ratio.  A ratio well below 1 means the device
    moves a run less than a new seed does."""
    diff = device_differences(steps)
    if diff.empty:
        return diff
    judged = load_runs(pattern=JUDGED)
    judged = judged[judged["seed"].isin(seeds)]
    out = []
    for (mode, init, q, step), g in diff.groupby(["mode", "init", "quantity", "step"]):
        spread = arm_values(judged, q, mode, init, step=int(step), non_finite="raise").std(ddof=1)
        worst = float(g["difference"].abs().max(skipna=False))   # a NaN replicate is not passed over
        out.append({"mode": mode, "init": init, "quantity": q, "step": int(step), "replicated_seeds": len(g),
                    "max_abs_device_difference": worst, "seed_sd": float(spread),
                    "ratio": _ratio(worst, float(spread))})
    return pd.DataFrame(out)


def _ratio(worst: float, spread: float) -> float:
    """How many seed spreads the device moved a run: with no seed spread, a move is infinitely
    many (inf), and no move of no spread is undefined (NaN), as is a NaN of either."""
    if spread > 0:
        return worst / spread
    return float("inf") if spread == 0 and worst > 0 else float("nan")


def paired_effect_shift(quantity: str, step: int = 10000) -> pd.DataFrame:
    """Per seed with both arms replicated: the encoder-minus-decoder effect on the judged
    runs and on the replicates, and how far the device moved it."""
    diff = device_differences((step,))
    d = diff[(diff["quantity"] == quantity) & (diff["init"] == "standard")]
    rows = []
    for seed, g in d.groupby("seed"):
        by = g.set_index("mode")
        if not {"encoder", "decoder"} <= set(by.index):
            continue
        judged = by.loc["encoder", "judged"] - by.loc["decoder", "judged"]
        rep = by.loc["encoder", "replicate"] - by.loc["decoder", "replicate"]
        rows.append({"seed": int(seed), "devices": f"{by.loc['encoder', 'judged_device']} -> "
                                                   f"{by.loc['encoder', 'replicate_device']}",
                     "effect_judged": float(judged), "effect_replicate": float(rep),
                     "shift": float(rep - judged)})
    return pd.DataFrame(rows, columns=["seed", "devices", "effect_judged", "effect_replicate", "shift"])


def same_device_effects(runs: pd.DataFrame, verdict_seeds, keys=None, level: float = 0.95) -> pd.DataFrame:
    """Each claim's paired effect over ``verdict_seeds`` as judged, and the same with every
    pair that trained across devices made whole on one device, where a replicate allows it:
    the arm that ran on the CPU is replaced by its GPU replicate (same seed, start and data).

    Not pre-registered: the plan paired arms within a device for Figs. 3a/3b only, and for
    Table 1 and Fig. S5b seeds 10-11 compare a CPU run with a GPU run.  This is shown beside
    the verdicts, never instead of them.  Columns: ``claim``, ``n``, ``across devices``
    (seeds), ``replaced`` (the runs swapped in), ``judged`` and ``same device``
    (:class:`~companion.rules.statistics.Estimate`)."""
    from . import blind

    keys = list(blind.CLAIMS) if keys is None else list(keys)
    judged = runs[runs["seed"].isin(verdict_seeds)]
    reps = _replicates()
    rows = []
    for key in keys:
        pairs = blind.pair_devices(judged, key)
        cross = pairs[~pairs["same device"]]
        same = judged
        replaced = []
        for _, r in cross.iterrows():
            arm = r["candidate"] if r["candidate device"] == "CPU" else r["comparator"]
            mode, init = arm.split("/")
            rep = None if reps is None else reps[(reps["mode"] == mode) & (reps["init"] == init)
                                                 & (reps["seed"] == r["seed"])]
            if rep is None or rep.empty or _device(rep["run"].iloc[0]) != "gpu":
                same = same[same["seed"] != r["seed"]]     # no same-device pair for this seed
                continue
            keep = ~((same["mode"] == mode) & (same["init"] == init) & (same["seed"] == r["seed"]))
            same = pd.concat([same[keep], rep[same.columns.intersection(rep.columns)]], ignore_index=True)
            replaced.append(rep["run"].iloc[0])
        rows.append({"claim": key, "n": int(len(pairs)),
                     "across devices": ", ".join(str(s) for s in cross["seed"]) or "none",
                     "replaced": ", ".join(replaced) or "none",
                     "judged": blind.effect(judged, key, level=level),
                     "same device": blind.effect(same, key, level=level)})
    return pd.DataFrame(rows)

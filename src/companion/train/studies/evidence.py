"""Cached training runs as seed-level evidence for the training verdicts.

A *body* of runs (``bodies`` in ``data/verdict_rules.yaml``: e.g. BERT-Mini on Wikipedia)
is one configuration trained under several objectives and initialisations with the same
seeds.  The verdicts of Figs. 3a, 3b, S5b and Table 1 compare two *arms* of a body seed by
seed (:func:`arm_values`), judge whether its runs got far enough to test the claim at all
(:func:`loss_gate`: held-out loss against the corpus's unigram reference), and take the
smallest effect of interest from the spread of untrained random forms of the body's shape
(:func:`null_band`).  :func:`settings` states what each run saw (learning rate, tokens,
passes over the data), for the chapters to disclose.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pandas as pd

from ...base.errors import CompanionError
from ...rules.training import context_part, gate_why  # noqa: F401  (re-exported: the gate's wording)
from ...rules.training import gate as training_gate

__all__ = ["body_runs", "device_label", "arm_values", "loss_gate", "evidence_table", "evidence_values", "gate_from_evidence",
           "gate_inputs", "body_evidence", "yardstick",
           "arm_reference", "EVIDENCE_COLUMNS", "gate_why", "logged_step", "null_band", "settings",
           "settings_text", "run_dates", "run_starts", "PAPER", "OBJECTIVE_OF_MODE", "published_iqr_width",
           "speedup_nats", "memorisation_gap", "run_device", "run_settings", "UNRECORDED"]

#: the unigram reference that matches each mode's objective: the masked-LM one for the
#: encoder and the authors' decoder (masked labels under a causal mask), next-token for the
#: true decoder
OBJECTIVE_OF_MODE = {"encoder": "encoder", "authors-decoder": "encoder", "decoder": "decoder"}


def _provenance(run: str, root=None) -> dict:
    """A cached run's provenance (under ``root``, default ``data/runs``), read and checked by
    :func:`companion.train.runner.runs.read_provenance` (refused in one line naming the run when
    it is not a readable record with good time stamps)."""
    from pathlib import Path

    from ..runner.runs import read_provenance, runs_root

    return read_provenance((Path(root) if root is not None else runs_root()) / run)


def load_patterns(patterns) -> pd.DataFrame | None:
    """The cached runs matching any of ``patterns`` (each run once); ``None`` when none is cached."""
    from ..runner.runs import load_runs

    frames = []
    for pat in patterns:
        try:
            frames.append(load_runs(pattern=pat))
        except FileNotFoundError:
            continue
    return pd.concat(frames, ignore_index=True).drop_duplicates() if frames else None


UNRECORDED = "an unrecorded device"

#: the quantities :func:`arm_values` reads per seed (besides the guard's ``guard_*`` losses)
KNOWN_QUANTITIES = ("symmetry", "directionality", "eval_loss", "train_loss")


def run_device(run: str) -> str:
    """Where a cached run trained, from its provenance: ``"CPU"``, the GPU's name, or
    :data:`UNRECORDED` where the provenance names none (never taken for a GPU)."""
    return device_label(_provenance(run))


def device_label(provenance: dict) -> str:
    """The device a provenance record names: ``"CPU"``, the GPU's name, or :data:`UNRECORDED`.
    An older record writes the device as its ``hardware`` itself (text), as the run catalogue
    reads it."""
    hw = provenance.get("hardware")
    dev = hw.get("device") if isinstance(hw, dict) else hw
    if not isinstance(dev, str) or not dev.strip():
        return UNRECORDED
    return "CPU" if dev.startswith("cpu") else dev


def run_settings(run: str) -> dict:
    """A cached run's device (:func:`run_device`), its torch threads and whether it trained
    under bf16 autocast, as its provenance records them (None where it does not)."""
    p = _provenance(run)
    cfg, hw = p.get("config") or {}, p.get("hardware") if isinstance(p.get("hardware"), dict) else {}
    device = run_device(run)
    bf16 = cfg.get("cpu_bf16") if device == "CPU" else cfg.get("bf16") if device != UNRECORDED else None
    return {"device": device, "threads": hw.get("torch_threads"), "bf16": bf16}


def body_runs(body: dict) -> pd.DataFrame | None:
    """The runs of one body (its ``pattern`` or list of ``patterns``), restricted to its
    ``seeds``; ``None`` when none is cached.  Adds ``corpus``, ``lr``, ``width`` and
    ``layers`` from each run's provenance.  A body that states its horizon (``steps``)
    refuses a run whose last evaluation is not at that step: its "final" values would be
    read at another horizon than the rule's.  A run made otherwise than the body's other runs
    (another size, optimiser, schedule, start, evaluation, ...: every field but the arm, seed
    and device) is refused, naming it and the field."""

    runs = load_patterns(body.get("patterns") or [body["pattern"]])
    if runs is None:
        return None
    runs = runs[runs["seed"].isin(body["seeds"]) & (runs["penalty"] == "none")]
    if runs.empty:
        return None
    if body.get("steps") is not None:
        last = runs[runs["quantity"] == "eval_loss"].groupby("run")["step"].max()
        off = last[last != int(body["steps"])]
        if len(off):
            raise CompanionError(
                f"run {off.index[0]} of the body {body.get('label', body.get('pattern'))!r} ends its "
                f"evaluations at step {int(off.iloc[0])}, not at the body's horizon {int(body['steps'])}; "
                "finish the run (its script resumes it) or move its folder out of data/runs.")
    from .registration import check_one_seed

    label = body.get("label", body.get("pattern"))
    meta, texts = {}, {}
    for r in runs["run"].unique():
        p = _provenance(r)   # present and a config object: load_runs read it
        check_one_seed(r, p)   # a copy of another seed's run with config.seed edited
        try:
            meta[r] = {"corpus": p["config"].get("corpus", "default"), "lr": float(p["config"]["lr"]),
                       "width": int(p["model_size"]["hidden_size"]),
                       "layers": int(p["model_size"]["num_hidden_layers"])}
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as err:
            raise CompanionError(f"run {r} of the body {label!r}: its provenance.json does not give config.lr and "
                                 f"model_size as numbers ({str(err)[:60]}); it was not written by `companion train`. "
                                 "Make the run again, or move its folder out of data/runs.") from None
        if body.get("lr") is not None and not math.isclose(meta[r]["lr"], float(body["lr"]), rel_tol=1e-9):
            raise CompanionError(f"run {r} was trained at learning rate {meta[r]['lr']:g}, but the body {label!r} "
                                 f"is the runs at {float(body['lr']):g}; it is not judged with them. Move its folder "
                                 "out of data/runs, or give it a body of its own in the rules.")
        digest = (p.get("data") or {}).get("documents_sha256") if isinstance(p.get("data"), dict) else None
        if digest is not None and not isinstance(digest, str):
            raise CompanionError(f"run {r} of the body {label!r}: its provenance's data.documents_sha256 is not a "
                                 "hash; copy the provenance again from the run's work folder.")
        if digest is not None:
            texts.setdefault(digest, []).append(r)
    if len(texts) > 1:   # one body, one text: runs on another corpus (or a changed archive) are refused
        common = max(texts, key=lambda d: len(texts[d]))
        odd = next(r for d, rs in texts.items() if d != common for r in rs)
        raise CompanionError(f"run {odd} of the body {label!r} was trained on other text (documents sha256 "
                             f"{next(d for d, rs in texts.items() if odd in rs)[:12]}..., the body's other runs "
                             f"{common[:12]}...); a body compares runs on one text. Move its folder out of "
                             "data/runs, or make it again on the body's corpus.")
    # the body's runs were made alike but for arm, seed and device (a field a run predates is
    # read as its default: companion.train.studies.registration.recorded_config)
    from .registration import same_learning_config

    same_learning_config({r: _provenance(r) for r in meta}, label)
    extra = pd.DataFrame.from_dict(meta, orient="index")
    return runs.join(extra, on="run")



def logged_step(runs: pd.DataFrame, fraction: float) -> int:
    """The logged evaluation step of ``runs`` nearest to ``fraction`` of their common
    horizon (the largest step every run reached), at or below it."""
    ev = runs[runs["quantity"] == "eval_loss"]
    horizon = int(ev.groupby("run")["step"].max().min())
    steps = sorted(s for s in ev["step"].unique() if s <= fraction * horizon)
    if not steps:
        raise CompanionError(f"no evaluation logged at or before {fraction:.0%} of step {horizon}.")
    return int(steps[-1])


def arm_values(runs: pd.DataFrame, quantity: str, mode: str, init: str = "standard",
               step: int | None = None, non_finite: str = "nan") -> pd.Series:
    """One value per seed of the arm ``(mode, init)``: the layer-mean ``quantity``
    (symmetry, directionality) or a loss logged once a step (``eval_loss``, ``train_loss``, the guard's ``guard_*``) at each run's last
    logged step (or at ``step``, where logged), indexed by seed.

    A row that is not a finite number (a diverged layer's score, say) is never averaged
    over: by default (``non_finite="nan"``) its seed reads NaN, as a seed with a NaN loss
    always did, so the gates that read it fail (rules v2's loss gate, rules v3's gate, which
    names the seed); ``non_finite="raise"`` refuses it, naming the run, layer and step."""
    if non_finite not in ("raise", "nan"):
        raise ValueError(f"non_finite must be 'raise' or 'nan', not {non_finite!r}.")
    arm = runs[(runs["mode"] == mode) & (runs["init"] == init)]
    if arm.empty:
        return pd.Series(dtype=float)
    if arm.groupby("seed")["run"].nunique().max() > 1:
        raise CompanionError(f"two runs of {mode}/{init} share a seed in one body; a body is one "
                             "configuration (check its pattern in data/verdict_rules.yaml).")
    if quantity in ("symmetry", "directionality"):
        rows = arm[(arm["quantity"] == quantity) & (arm["head"] == -1)]
    elif quantity in ("eval_loss", "train_loss") or quantity.startswith("guard_"):   # one value per step
        rows = arm[arm["quantity"] == quantity]
    else:
        raise CompanionError(f"unknown quantity {quantity!r}: a body's value is one of {', '.join(KNOWN_QUANTITIES)} "
                             "or a guard_* loss; correct the quantity (in the rule that names it, or in the call).")
    if step is None:
        rows = rows[rows["step"] == rows.groupby("run")["step"].transform("max")]
        if quantity in ("symmetry", "directionality"):
            _refuse_structure_off_the_end(arm, rows, quantity)
    else:
        rows = rows[rows["step"] == step]
    twice = rows.duplicated(["run", "step", "layer", "head"], keep=False)
    if twice.any():
        r = rows[twice].iloc[0]
        where = f"layer {int(r['layer'])}'s " if int(r["layer"]) >= 0 else ""
        raise CompanionError(
            f"run {r['run']}: {where}{quantity} at step {int(r['step'])} is logged {int(twice.sum())} times in "
            f"{mode}/{init}; a run logs each value once, and averaging the copies would read a value it never "
            "logged. Copy its history.csv again from the run's work folder, or move its folder out of data/runs.")
    bad = ~np.isfinite(rows["value"].to_numpy(dtype=float))
    if bad.any() and non_finite == "raise":
        r = rows[bad].iloc[0]
        where = f"layer {int(r['layer'])}'s " if int(r["layer"]) >= 0 else ""
        raise CompanionError(
            f"run {r['run']}: {where}{quantity} at step {int(r['step'])} is {r['value']} "
            f"({int(bad.sum())} such row(s) in {mode}/{init}); a seed's mean would hide it. "
            "Retrain the run or leave its seed out of the body's seeds.")
    values = rows.groupby("seed")["value"].mean()
    return values.where(~values.index.isin(rows.loc[bad, "seed"].unique()), np.nan)


def _refuse_structure_off_the_end(arm: pd.DataFrame, rows: pd.DataFrame, quantity: str) -> None:
    """Refuse (naming the run) a structure score whose last logged step is not the run's last
    evaluation: a cut-off history (the last evaluation's scores lost) or a score logged after
    it would be read as the run's final value."""
    ends = arm[arm["quantity"] == "eval_loss"].groupby("run")["step"].max()
    last = rows.groupby("run")["step"].max()
    for run, at in last.items():
        if run in ends.index and int(at) != int(ends[run]):
            raise CompanionError(
                f"run {run}: its last {quantity} is logged at step {int(at)} but its last evaluation at step "
                f"{int(ends[run])}; a structure score is logged with every evaluation, so its history.csv is cut "
                "off or edited and its final value would be read at another step. Copy history.csv again from "
                "the run's work folder, or move its folder out of data/runs.")


@lru_cache(maxsize=None)
def _unigram_reference(corpus: str, seq_len: int, top_k, objective: str, init_from: str | None = None) -> float:
    """The unigram reference of a body's data; a run from a checkpoint used that checkpoint's
    own tokenizer (:func:`companion.train.models.pretrained.pretrained_folder`), the others the default."""
    from ..text.data import token_data_for_corpus, unigram_cross_entropy

    tokenizer = None
    if init_from:
        from ..models.pretrained import pretrained_folder

        tokenizer = pretrained_folder(init_from)
    return unigram_cross_entropy(token_data_for_corpus(corpus, seq_len, top_k=top_k, tokenizer_name=tokenizer),
                                 objective)


def _shape(run: str, root=None) -> dict:
    p = _provenance(run, root)
    c, m = p["config"], p["model_size"]
    return {"corpus": c.get("corpus", "default"), "seq_len": c.get("seq_len") or m["seq_len"],
            "top_k": c.get("top_k"), "width": m["hidden_size"], "layers": m["num_hidden_layers"],
            "init_from": c.get("init_from")}


def loss_gate(runs: pd.DataFrame, arms, nats: float) -> dict:
    """Whether every arm ``(mode, init)`` ended at least ``nats`` below its unigram
    reference (seed-mean final held-out loss).  Returns ``{"passes": bool, "arms": {arm:
    {"loss", "reference", "below", "passes"}}}``; an arm with no runs does not pass."""
    out = {(mode, init): context_part(arm_values(runs, "eval_loss", mode, init),
                                      lambda mode=mode, init=init: arm_reference(runs, mode, init), nats)
           for mode, init in arms}
    return {"passes": all(a["passes"] for a in out.values()), "arms": out}


def memorisation_gap(runs: pd.DataFrame, mode: str, init: str = "standard") -> pd.Series:
    """Per seed: the final held-out loss minus the training loss averaged over the last
    evaluation interval's steps (rules v2's memorisation guard).  Positive: the model does
    better on text it has trained on."""
    arm = runs[(runs["mode"] == mode) & (runs["init"] == init)]
    out = {}
    for (run, seed), g in arm.groupby(["run", "seed"]):
        ev = g[g["quantity"] == "eval_loss"].sort_values("step")
        tr = g[g["quantity"] == "train_loss"]
        if len(ev) < 2 or tr.empty:
            continue
        last, before = int(ev["step"].iloc[-1]), int(ev["step"].iloc[-2])
        window = tr[(tr["step"] > before) & (tr["step"] <= last)]["value"].to_numpy(dtype=float)
        # a step's NaN loss is not skipped: the gap reads NaN and the gate names the seed
        out[seed] = (float(ev["value"].iloc[-1]) - float(window.mean())
                     if len(window) and np.isfinite(window).all() else float("nan"))
    return pd.Series(out, dtype=float)


def arm_reference(runs: pd.DataFrame, mode: str, init: str = "standard") -> float:
    """The unigram reference of what the arm's objective predicts (NaN for an arm without runs)."""
    sub = runs[(runs["mode"] == mode) & (runs["init"] == init)]
    if sub.empty:
        return float("nan")
    if mode not in OBJECTIVE_OF_MODE:
        raise CompanionError(f"unknown mode {mode!r}: an arm's mode is one of {', '.join(OBJECTIVE_OF_MODE)}; "
                             "correct the arm (in the rule that names it, or in the call).")
    s = _shape(sub["run"].iloc[0])
    return _unigram_reference(s["corpus"], s["seq_len"], s["top_k"], OBJECTIVE_OF_MODE[mode], s["init_from"])


#: the columns of :func:`evidence_table`
EVIDENCE_COLUMNS = ("mode", "init", "seed", "end", "end_logged", "half", "half_logged", "half_step", "eval_loss",
                    "loss_logged", "memorisation_gap", "reference")


def evidence_table(runs: pd.DataFrame, quantity: str, arms, horizon_fraction: float = 0.5) -> pd.DataFrame:
    """A body's evidence for one quantity, built once and read by every test of its claim:
    one row per arm ``(mode, init)`` and seed, with

    ``end``
        the layer-mean ``quantity`` at the run's last logged step (:func:`arm_values`);
    ``half``, ``half_logged``, ``half_step``
        the same at the body's half-horizon step (:func:`logged_step` of ``horizon_fraction``;
        ``half_logged`` false where the run logged nothing there);
    ``eval_loss``
        the final held-out loss;
    ``memorisation_gap``
        held-out minus training loss over the last evaluation interval (:func:`memorisation_gap`);
    ``reference``
        the unigram reference of the arm's objective (:func:`arm_reference`).

    A seed missing from one of them has NaN there, and ``end_logged``, ``half_logged`` and
    ``loss_logged`` say whether the run logged the value at all (a logged NaN stays NaN)."""
    try:
        half_step = logged_step(runs, horizon_fraction)
    except CompanionError:
        half_step = None
    rows = []
    for mode, init in arms:
        end = arm_values(runs, quantity, mode, init)
        half = (arm_values(runs, quantity, mode, init, step=half_step) if half_step is not None
                else pd.Series(dtype=float))
        loss = arm_values(runs, "eval_loss", mode, init)
        gap = memorisation_gap(runs, mode, init)
        ref = arm_reference(runs, mode, init) if len(end) or len(loss) else float("nan")
        for seed in sorted(set(end.index) | set(loss.index) | set(gap.index) | set(half.index)):
            rows.append({"mode": mode, "init": init, "seed": int(seed), "end": end.get(seed, np.nan),
                         "end_logged": seed in end.index, "half": half.get(seed, np.nan),
                         "half_logged": seed in half.index, "half_step": half_step,
                         "eval_loss": loss.get(seed, np.nan), "loss_logged": seed in loss.index,
                         "memorisation_gap": gap.get(seed, np.nan), "reference": ref})
    return pd.DataFrame(rows, columns=list(EVIDENCE_COLUMNS))


_LOGGED = {"end": "end_logged", "half": "half_logged", "eval_loss": "loss_logged"}


def evidence_values(table: pd.DataFrame, arm, column: str = "end") -> pd.Series:
    """One arm's ``column`` of an :func:`evidence_table`, indexed by seed: for ``end``,
    ``half`` and ``eval_loss`` only the seeds whose run logged it, as :func:`arm_values` reads
    them.  A table without the columns the rules read is refused where it is read."""
    mode, init = arm
    need = ("mode", "init", "seed", column) + ((_LOGGED[column],) if column in _LOGGED else ())
    missing = [c for c in need if c not in table.columns]
    if missing:
        raise CompanionError(f"the evidence table lacks the columns {missing}; build it with "
                             "companion.train.studies.evidence.evidence_table.")
    rows = table[(table["mode"] == mode) & (table["init"] == init)]
    if column in _LOGGED:
        rows = rows[rows[_LOGGED[column]].astype(bool)]
    return pd.Series(rows[column].to_numpy(float), index=rows["seed"].to_numpy(), dtype=float)


def gate_from_evidence(table: pd.DataFrame, arms, e_end, e_half, sesoi: float, gate: dict) -> dict:
    """Rules v2's gate (:func:`companion.rules.training.gate`) for one paired test of ``arms``,
    read from the body's :func:`evidence_table`: ``e_end``, ``e_half`` the paired estimates
    at the end and half-way (``e_half`` None where it could not be formed), ``gate`` the
    framework's gate settings."""
    inputs = gate_inputs(table, arms)
    return training_gate(inputs["losses"], inputs["references"], inputs["gaps"], inputs["half_step"],
                         e_end, e_half, sesoi, gate)


def gate_inputs(table: pd.DataFrame, arms) -> dict:
    """What the gate reads of each arm ``(mode, init)`` of an :func:`evidence_table`: final
    held-out losses by seed, the unigram reference (read when needed), memorisation gaps by
    seed, and the half-horizon step (None where none was logged)."""
    steps = table["half_step"].dropna()
    return {"losses": {arm: evidence_values(table, arm, "eval_loss") for arm in arms},
            "references": {arm: (lambda arm=arm: evidence_values(table, arm, "reference").iloc[0]) for arm in arms},
            "gaps": {arm: evidence_values(table, arm, "memorisation_gap") for arm in arms},
            "half_step": int(steps.iloc[0]) if len(steps) else None}


def yardstick(r: dict, runs: pd.DataFrame | None, quantity: str) -> float:
    """The smallest effect of interest of rule ``r`` for ``quantity`` on a body of ``runs``:
    a number, or a named yardstick of the rules file (``published-iqr-width``,
    ``table-1-speedup-nats``), or the v1 ``null-band`` (random forms of the body's shape)."""
    v = r["sesoi"]
    if not isinstance(v, str):
        return float(v)
    if v == "published-iqr-width":
        return published_iqr_width(quantity)
    if v == "table-1-speedup-nats":
        try:
            speedup = float(r["yardsticks"][v]["speedup"])
        except (KeyError, TypeError, ValueError):
            raise CompanionError(f"rule {r.get('key')!r} uses the yardstick {v!r} but its rules file gives no "
                                 f"yardsticks.{v}.speedup number; add it.") from None
        return speedup_nats(runs, speedup, r["arms"]["mode"], r["arms"]["baseline"])
    if v == "null-band":
        return null_band(runs, quantity)
    raise CompanionError(f"unknown yardstick {v!r} in rule {r.get('key')!r}: a yardstick is a number or one of "
                         "published-iqr-width, table-1-speedup-nats, null-band.")


def body_evidence(runs: pd.DataFrame, r: dict, pairs) -> dict:
    """Everything rule ``r`` reads of one body of ``runs``, built once (one pass): the
    :func:`evidence_table` of its quantity over every arm of ``pairs`` (``(candidate arm,
    comparator arm, comparator label)``, :func:`companion.rules.training.pairs_of`), the
    yardstick, the runs' starts and learning rate, and per pair that has seeds in common its
    paired values at the end and half-way, the gate's inputs (:func:`gate_inputs`) and
    version 1's band.  The rule is applied to it by :func:`companion.rules.training.apply_rule_to_pair`."""
    q = r["quantity"]
    arms = list(dict.fromkeys(arm for cand, comp, _ in pairs for arm in (cand, comp)))
    table = evidence_table(runs, q, arms, r["framework"]["gate"]["horizon_fraction"])
    out_pairs = []
    for cand, comp, label in pairs:
        a, b = evidence_values(table, cand), evidence_values(table, comp)
        if a.empty or b.empty or len(a.index.intersection(b.index)) == 0:
            continue
        sub = runs[(runs["mode"] == cand[0]) | (runs["mode"] == comp[0])]
        first_band = 0.0 if r["key"] == "table_1" else (null_band(sub, q) if q in ("symmetry", "directionality")
                                                      else 0.0)
        out_pairs.append({"candidate": cand, "comparator": label, "arms": (cand, comp), "end": (a, b),
                          "half": (evidence_values(table, cand, "half"), evidence_values(table, comp, "half")),
                          "seeds": sorted(int(s) for s in a.index.intersection(b.index)), "first_band": first_band,
                          **gate_inputs(table, [cand, comp])})
    return {"table": table, "sesoi": yardstick(r, runs, q), "starts": list(run_starts(runs).values()),
            "lr": float(runs["lr"].iloc[0]), "pairs": out_pairs}


def published_iqr_width(score: str) -> float:
    """Rules v2's yardstick for a structure score: the median interquartile width that the
    paper prints (Tables S2/S3) over the text models the book maps to a pretrained
    checkpoint; a gap smaller than this cannot separate two of Fig. 3's median +- IQR bands."""
    base = score.replace("update_", "")
    if base not in ("symmetry", "directionality"):
        raise CompanionError(f"the published yardstick exists for symmetry and directionality (and their update_ "
                             f"forms), not {score!r}; correct the rule's quantity or give it a numeric yardstick.")
    df = _published()
    df = df[(df["score"] == base)]
    return float((df["iqr_below"] + df["iqr_above"]).median())


@lru_cache(maxsize=1)
def _published():
    from ...zoo.catalog import published_scores

    df = published_scores()
    return df[(df["modality"] == "text") & (df["row_note"] == "")]


def speedup_nats(runs: pd.DataFrame, speedup: float, mode: str = "encoder", init: str = "standard") -> float:
    """Rules v2's Table 1 yardstick: what a speed-up of ``speedup`` (a share of the steps) is
    worth in held-out loss at the end, on the baseline's own seed-mean curve: its loss at
    ``1 - speedup`` of the horizon (each seed's linear between its logged steps,
    :func:`.compare.value_at_step`) minus its loss at the horizon, averaged over seeds.  A seed
    without a number at either makes it NaN (never a mean over the other seeds), and seeds
    logging different steps are each read on their own (a mean per step mixed them)."""
    from .compare import value_at_step

    arm = runs[(runs["mode"] == mode) & (runs["init"] == init) & (runs["quantity"] == "eval_loss")]
    if arm.empty:
        return float("nan")
    horizon = float(arm.groupby("run")["step"].max().min())
    gap = value_at_step(arm, (1 - speedup) * horizon) - value_at_step(arm, horizon)
    return float(gap.mean(skipna=False))


def null_band(runs: pd.DataFrame, quantity: str) -> float:
    """The smallest effect of interest for a gap in ``quantity`` between two runs of this
    body: the 97.5% quantile of the gap between two untrained random models of its shape
    (:func:`companion.train.studies.compute_study.gap_null_band`)."""
    from .compute_study import gap_null_band

    s = _shape(runs["run"].iloc[0])
    return gap_null_band(s["width"], s["layers"], quantity=quantity)


def run_dates(runs: pd.DataFrame) -> list[str]:
    """The finishing dates in the provenance of every run of ``runs``."""
    out = []
    for r in sorted(runs["run"].unique()):
        date = _provenance(r).get("date")   # checked where present
        if date is None:
            raise CompanionError(f"run {r}: its provenance.json records no finishing date; copy the provenance "
                                 "again from the run's work folder, or move its folder out of data/runs.")
        out.append(date)
    return out


def run_starts(runs: pd.DataFrame) -> dict:
    """When each run of ``runs`` started: provenance ``started``; for runs made before that
    field was recorded, the finishing ``date`` less the run's ``duration_s`` (its time
    training; a run resumed over several sittings started earlier still, so this is an
    upper bound, and such a run can only look blind when it was not: none of them is judged
    blind)."""
    import datetime as dt

    from ..runner.provenance import stamp_instant

    out = {}
    for r in sorted(runs["run"].unique()):
        p = _provenance(r)   # its stamps checked: aware ISO times where present
        if p.get("started") is not None:
            out[r] = p["started"]
            continue
        duration = p.get("duration_s", 0)
        if p.get("date") is None or isinstance(duration, bool) or not isinstance(duration, (int, float)) \
                or not math.isfinite(duration) or duration < 0:
            raise CompanionError(f"run {r}: its provenance.json records neither when it started nor a finishing "
                                 "date and a duration in seconds, so when it was made cannot be told; copy the "
                                 "provenance again from the run's work folder, or move its folder out of data/runs.")
        end = stamp_instant(p["date"])
        out[r] = (end - dt.timedelta(seconds=float(duration))).isoformat()
    return out


def settings(runs: pd.DataFrame) -> pd.DataFrame:
    """What each run of ``runs`` saw, one row per run: mode, init, seed, steps, batch,
    block length, learning rate, warm-up, decay horizon, tokens seen, training tokens of
    the corpus split and passes over it (tokens seen / training tokens)."""
    rows = []
    for r in sorted(runs["run"].unique()):
        p = _provenance(r)
        c, m, d = p["config"], p["model_size"], p.get("data") or {}
        seq = c.get("seq_len") or m["seq_len"]
        seen = c["steps"] * c["batch_size"] * c.get("grad_accum", 1) * seq
        train = d.get("train_tokens")
        rows.append({"run": r, "mode": c["mode"], "init": c["init"], "seed": c["seed"], "steps": c["steps"],
                     "batch": c["batch_size"] * c.get("grad_accum", 1), "seq_len": seq, "lr": c["lr"],
                     "warmup": c["warmup"], "decay_steps": c.get("decay_steps") or c["steps"],
                     "tokens_seen": seen, "train_tokens": train,
                     "passes": seen / train if train else float("nan")})
    return pd.DataFrame(rows)


#: the paper's training setting (Appendix S2): AdamW, 5e-5 peak learning rate, 200 warm-up
#: steps then linear decay, weight decay 0.01, 200,000 steps of 32 x 8 sequences of 512 tokens
PAPER = {"lr": 5e-5, "warmup": 200, "steps": 200_000, "batch": 32 * 8, "seq_len": 512, "weight_decay": 0.01}
PAPER["tokens_per_step"] = PAPER["batch"] * PAPER["seq_len"]


def _one(values, fmt="{:g}") -> str:
    vals = sorted(set(values))
    return fmt.format(vals[0]) if len(vals) == 1 else " to ".join(fmt.format(v) for v in (vals[0], vals[-1]))


def settings_text(runs: pd.DataFrame, gate_nats: float | None = None) -> str:
    """One sentence that discloses what the runs of ``runs`` saw, for a chapter to glue:
    learning rate against the paper's, warm-up and decay, steps, tokens seen, passes over
    the training split, and each mode's final held-out loss against its unigram reference.
    """
    st = settings(runs)

    def sci(x):  # 0.001 -> 1e-3
        return "{:.0e}".format(x).replace("e-0", "e-").replace("e+0", "e")

    lr = " to ".join(sci(v) for v in sorted({st["lr"].min(), st["lr"].max()}))
    ratio = st["lr"] / PAPER["lr"]
    times = ("the paper's" if (abs(ratio - 1) < 1e-9).all() else
             f"{_one(ratio, '{:.0f}')} times the paper's {sci(PAPER['lr'])}")
    text = (f"learning rate {lr} ({times}), {_one(st['warmup'])} warm-up "
            f"steps, linear decay to 0 at step {_one(st['decay_steps'], '{:,}')}; {_one(st['steps'], '{:,}')} "
            f"steps of {_one(st['batch'])} blocks of {_one(st['seq_len'])} tokens: "
            f"{_one(st['tokens_seen'] / 1e6, '{:.2f}')} million tokens seen, "
            f"{_one(st['passes'], '{:.1f}')} passes over the "
            f"{_one(st['train_tokens'] / 1e6, '{:.2f}')}-million-token training split")
    if gate_nats is None:
        from ...rules.rulebook import earlier_rules as load_rules   # the bodies made before the rules in force

        gate_nats = load_rules()["framework"]["gate"]["context_floor_nats"]
    gate = loss_gate(runs, sorted({(m, "standard") for m in runs["mode"].unique()}), gate_nats)
    below = [f"{g['below']:.2f} ({m})" for (m, _), g in gate["arms"].items() if g["below"] == g["below"]]
    if below:
        text += "; final held-out loss below the unigram reference by " + ", ".join(below) + " nats"
    return text

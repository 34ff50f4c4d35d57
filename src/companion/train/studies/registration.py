"""What a run of a rules-v3/v4 body must have been made with: its body's registration.

A body is registered in the rules file by its corpus, learning rate and horizon, and in its
plan (data/runs/v3_plan.md, data/runs/chars_plan.md) by the command its runs are made with.
:func:`registered_config` is the configuration that command gives a run of one arm and seed,
with ``companion train``'s defaults for the rest; :func:`check_registered` refuses, in one line naming
the run, the field and the fix, a run whose provenance differs from it in any field that
changes what the run learns (size, batch, schedule, optimiser, penalty, start, evaluation,
precision, ...), or whose folder names another arm or seed.  Used by
:func:`companion.train.studies.registered_bodies.body_runs_at_looks`.
"""

from __future__ import annotations

import math

from ...base.errors import CompanionError

__all__ = ["REGISTERED", "REGISTERED_OPTIONS", "FIELDS_ADDED", "MAY_DIFFER", "registered_config", "check_registered",
           "recorded_config", "run_started", "same_learning_config", "run_name", "check_one_seed",
           "check_horizon"]


def run_name(body: dict, arm: str, seed: int) -> str:
    """``mixv3-bert-mini-encoder-standard-s30`` from the body's pattern, an arm and a seed."""
    mode, init = arm.split("/")
    return f"{body['pattern'].rstrip('*')}{mode}-{init}-s{seed}"


#: the training options every run of a rules-v3/v4 body was registered with (data/runs/v3_plan.md,
#: data/runs/chars_plan.md; the COMMON line of make_v3_runs.sh, make_chars_runs.sh and
#: device_v3.sh), besides the body's own corpus, learning rate and horizon, and each run's arm
#: and seed; every other field is ``companion train``'s default.  How a device runs them
#: (threads, --device, --cpu-bf16, checkpoints) is not here.
REGISTERED = {"size": "bert-mini", "batch_size": 16, "warmup": 100, "eval_every": 250, "eval_blocks": 320,
              "guard": True, "keep_weights": (5000, 10000)}
#: :data:`REGISTERED` as the command's options
REGISTERED_OPTIONS = " ".join(f"--{k.replace('_', '-')}" + ("" if v is True else f" {','.join(map(str, v))}"
                                                            if isinstance(v, tuple) else f" {v}")
                              for k, v in REGISTERED.items())

#: configuration fields ``companion train`` began recording after some landed runs were made,
#: with the commit that added each: a run that started before it and lacks the field is read
#: with the field's default (it could not record it, and ran with the default); any other run
#: lacking a field is refused.  (Every landed v3/v4 run records every field; version 2's
#: bodies hold runs from before each of these.)
FIELDS_ADDED = {"layers": "2026-11-23T15:31:51+00:00", "width": "2026-11-23T15:31:51+00:00",
                "heads": "2026-11-23T15:31:51+00:00", "decay_steps": "2026-11-25T04:00:00+00:00",
                "optimizer": "2026-11-25T04:35:59+00:00", "update_every": "2026-11-25T04:35:59+00:00",
                "init_from": "2026-11-25T10:37:44+00:00", "eval_other": "2026-11-25T19:25:55+00:00",
                "cpu_bf16": "2026-11-26T21:54:41+00:00", "guard": "2026-11-28T06:04:30+00:00",
                "keep_weights": "2026-11-28T06:04:30+00:00"}

#: fields a registration leaves to the device (checked apart: the pair's device, bf16 autocast)
_DEVICE_FIELDS = frozenset({"device", "bf16", "cpu_bf16", "checkpoint_every", "compile", "keep_weights"})


def registered_config(body: dict, arm: str, seed: int) -> dict:
    """The configuration (``TrainConfig`` as a run's provenance records it, ``model_size``
    included) that the body's registered command gives the run of ``arm`` (MODE/INIT) and
    ``seed``: :data:`REGISTERED` with the body's corpus, learning rate and horizon, and
    ``companion train``'s defaults for everything else (optimiser, weight decay, penalty,
    start, ...; top-k as ``companion train`` chooses it for the corpus)."""
    import dataclasses

    from ..runner.config import TrainConfig
    from ..text.corpora import CORPORA

    mode, init = arm.split("/")
    spec = CORPORA.get(body["corpus"])
    tokenizer = body.get("tokenizer") not in (None, "all-minilm-l6-v2")   # the default tokenizer's vocabulary
    top_k = None if spec is not None and spec.fitted_vocab and not tokenizer else 4096
    try:
        cfg = TrainConfig(**REGISTERED, mode=mode, init=init, seed=int(seed), steps=int(body["steps"]),
                          lr=float(body["lr"]), corpus=str(body["corpus"]), top_k=top_k)
    except (TypeError, ValueError) as err:   # a body the loader let through
        raise CompanionError(f"body {body.get('label', body['pattern'])!r}: its registered configuration cannot be "
                             f"made ({err}); correct the body in the rules file.") from None
    out = dataclasses.asdict(cfg)
    out["model_size"] = dataclasses.asdict(cfg.model_size)
    return out


def _same_value(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=0.0)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def run_started(prov: dict):
    """When a run started (a UTC datetime): its ``started`` stamp, else (runs made before
    runs recorded it) its ``date`` less its ``duration_s``; None where neither is there."""
    from ...rules.verdicts import _as_datetime
    from ..runner.runs import run_start   # the one reading of a run's start (a body's first start too)

    try:
        start = run_start(prov)
        return None if start is None else _as_datetime(start)   # a stamp without a zone read as UTC
    except (TypeError, ValueError, OverflowError, AttributeError, CompanionError):
        return None


def recorded_config(prov: dict) -> dict:
    """A run's configuration with each field of :data:`FIELDS_ADDED` it lacks filled with the
    field's default where the run started before the field was recorded (it ran with the
    default); a field it lacks otherwise stays missing."""
    import dataclasses

    from ...rules.verdicts import _as_datetime
    from ..runner.config import TrainConfig

    cfg = dict(prov.get("config") or {})
    start = run_started(prov)
    defaults = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    for field, since in FIELDS_ADDED.items():
        if field not in cfg and start is not None and start < _as_datetime(since) and field in defaults:
            cfg[field] = defaults[field]
    return cfg


#: configuration fields that may differ between the runs of one body: the arm and seed (what a
#: claim compares), and how the device ran the arithmetic (a pair's device is checked apart)
MAY_DIFFER = frozenset({"mode", "init", "seed", "device", "bf16", "cpu_bf16", "checkpoint_every", "compile",
                        "keep_weights"})


def same_learning_config(provenances: dict, label: str) -> None:
    """Every run of a body (``{run: provenance}``) has the same configuration
    (:func:`recorded_config`) in every field that changes what it learns or how it is read
    (size, widths, batch, schedule, optimiser, penalty, start, corpus, evaluation, guard, ...):
    only the arm, the seed and the device may differ.  A run that differs from the body's
    other runs is refused, naming the run, the field and both values; the reference is the
    configuration most of the body's runs share."""
    if len(provenances) < 2:
        return
    from collections import Counter

    def learning(cfg):   # 10000 and 10000.0 are one horizon, as check_registered reads them (_same_value)
        return tuple(sorted((k, _canonical(v)) for k, v in cfg.items() if k not in MAY_DIFFER))

    configs = {name: recorded_config(p) for name, p in provenances.items()}
    ref_key, _ = Counter(learning(c) for c in configs.values()).most_common(1)[0]
    ref = dict(ref_key)
    shown = {}
    for name, cfg in configs.items():
        for k, v in cfg.items():
            shown.setdefault((k, _canonical(v)), repr(v))
    for name, cfg in sorted(configs.items()):
        mine = dict(learning(cfg))
        for field in sorted(set(ref) | set(mine)):
            if ref.get(field) != mine.get(field):
                raise CompanionError(f"run {name} was made with {field} = {repr(cfg[field]) if field in cfg else 'unset'}, "
                                     f"where the other runs of body {label!r} have "
                                     f"{shown.get((field, ref[field]), ref[field]) if field in ref else 'unset'}; a "
                                     "body's runs differ only in arm, seed and device: move it out of data/runs.")


def _canonical(v) -> str:
    """``v`` as text in which two values :func:`_same_value` takes for one read alike: a whole
    float as its int (``10000.0`` is ``10000``), a bool apart from 1 and 0."""
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return repr(int(v))
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_canonical(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: {_canonical(x)}" for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))) + "}"
    return repr(v)


def check_one_seed(name: str, prov: dict) -> None:
    """Refuse (one line naming run ``name``) a provenance whose ``seed`` and ``config.seed``
    differ: the trainer writes the one seed in both places, so a folder copied to another
    seed with its ``config.seed`` edited would otherwise be read as that seed's run."""
    from ..runner.provenance import whole_count

    seed, own = prov.get("seed"), (prov.get("config") or {}).get("seed")
    if seed is None or own is None:
        return
    if isinstance(own, bool) or whole_count(seed) is None or whole_count(seed) != whole_count(own):
        raise CompanionError(f"run {name}: its provenance.json gives seed {str(seed)[:20]} and config.seed "
                             f"{str(own)[:20]}, which the trainer writes alike, so which seed made the run cannot be "
                             "told (a copy of another seed's run?); copy provenance.json again from the run's work "
                             "folder, or move the run out of data/runs.")


def check_registered(name: str, prov: dict, body: dict, device: str) -> None:
    """Refuse (one line naming the run, the field, both values and the fix) a run of ``body``
    whose configuration is not its registration's (:func:`registered_config`), whose folder
    names another arm or seed than it trained, whose arm is not one of the body's, or which did
    not train under bf16 autocast on its device."""
    label = body.get("label", body["pattern"])
    cfg = prov.get("config") or {}
    arm, seed = f"{cfg.get('mode')}/{cfg.get('init')}", cfg.get("seed")
    arms = list(body.get("arms") or []) + list(body.get("secondary_arms") or [])
    if arms and arm not in arms:
        raise CompanionError(f"run {name} trained the arm {arm}, which body {label!r} does not register "
                             f"({', '.join(arms)}); move it out of data/runs.")
    if run_name(body, arm, seed) != name:
        raise CompanionError(f"run {name} trained {arm} seed {seed}, so its folder should be "
                             f"{run_name(body, arm, seed)}; a run is read as the arm and seed its folder names: "
                             "move it out of data/runs (or rename it, if the folder name is the mistake).")
    check_one_seed(name, prov)
    want = registered_config(body, arm, seed)
    got = dict(recorded_config(prov), model_size=prov.get("model_size"))
    for field in sorted(want):
        if field in _DEVICE_FIELDS:
            continue
        if field not in got:
            raise CompanionError(f"run {name}'s provenance records no {field}, which every run of body {label!r} "
                                 f"records (registered: {want[field]!r}); copy provenance.json again from the run's "
                                 "work folder, or move the run out of data/runs.")
        if not _same_value(got[field], want[field]):
            shown = (lambda v: (repr(v) if isinstance(v, str) else str(v))[:60])   # '16' is not 16
            raise CompanionError(f"run {name} was made with {field} = {shown(got[field])}, not with {field} = "
                                 f"{shown(want[field])} as body {label!r} registers (its plan: "
                                 f"{body.get('plan', 'the rules file')}); it is not a run of the body: move it out "
                                 "of data/runs.")
    unknown = sorted(set(cfg) - set(want))
    if unknown:   # a field this package's trainer does not have: made by another trainer, or edited
        raise CompanionError(f"run {name}'s provenance records {unknown[0]} = {str(cfg[unknown[0]])[:60]}, a setting "
                             f"`companion train` does not have, so body {label!r} cannot check it; it is not a "
                             "run of the body as registered: move it out of data/runs.")
    precision = got.get("cpu_bf16") if device == "CPU" else got.get("bf16")
    if precision is not True:
        flag = "--cpu-bf16" if device == "CPU" else "bf16 (no --no-bf16)"
        raise CompanionError(f"run {name} did not train under bf16 autocast on its device ({device}), which body "
                             f"{label!r} registers ({flag}); it is not a run of the body: move it out of data/runs.")


def check_horizon(runs, body: dict) -> None:
    """Refuse (one line naming the run) a run of ``body`` (``runs``: its rows, as
    :func:`companion.train.runner.runs.load_runs` reads them) that does not end at the body's
    horizon: its last evaluation elsewhere, no evaluation at all, or a structure score (logged
    with every evaluation) whose last step is not its last evaluation's, a cut-off history
    whose claim would read a missing value at the horizon as a broken seed."""
    names = sorted(runs["run"].unique())
    last = runs[runs["quantity"] == "eval_loss"].groupby("run")["step"].max().reindex(names)
    if last.isna().any():   # a history without its evaluations escaped the horizon check below
        raise CompanionError(f"run {last.index[last.isna()][0]} logs no eval_loss at all, so it does not end at the "
                             f"body's horizon {body['steps']}; copy its history.csv again from the run's work folder "
                             "(or finish the run: its script resumes it).")
    short = last[last != body["steps"]]
    if len(short):
        raise CompanionError(f"run {short.index[0]} ends its evaluations at step {int(short.iloc[0])}, not at the "
                             f"body's horizon {body['steps']}; finish it (its script resumes it).")
    for q in ("symmetry", "directionality"):   # logged with every evaluation; a claim reads it at the horizon
        ends = runs[(runs["quantity"] == q) & (runs["head"] == -1)].groupby("run")["step"].max().reindex(names)
        off = ends[ends != last]
        if len(off):
            at = "logs none" if off.isna().iloc[0] else f"logs its last at step {int(off.iloc[0])}"
            raise CompanionError(f"run {off.index[0]} {at} of {q}, a score logged with every evaluation, but its "
                                 f"last evaluation is at step {int(last[off.index[0]])}: its history.csv is cut off "
                                 "or edited, and its value at the horizon would be missing or another step's; copy "
                                 "history.csv again from the run's work folder, or move the run out of data/runs.")


def _rules_commit(body: dict | None = None):
    """When the rules that registered ``body`` were first committed: the oldest commit of the
    file named in the body's ``registered`` holding its stamp
    (:func:`companion.rules.verdicts.rule_commit_time`); without a body (or a version-3 file
    whose bodies name no registration), the rules in force's own stamp.  None outside a git
    checkout.  A registration whose file is not there (renamed) or does not hold its stamp
    (amended) is refused: read as 'outside a git checkout', the anchor fell back to the stamp; so is
    a stamp that no commit holds (:func:`companion.rules.verdicts.rule_commit_time`)."""
    import datetime as dt

    from ...rules.verdicts import rule_commit_time, stamp_spellings

    stamp, path = _registration(body)
    text = stamp.isoformat() if isinstance(stamp, dt.date) else str(stamp)
    # the file holds the stamp in whichever ISO spelling it was written (09:59:00Z is 09:59:00+00:00)
    if not path.is_file() or not (text in (held := path.read_text(encoding="utf-8", errors="replace"))
                                  or stamp_spellings(held, stamp)):
        where = "is not there" if not path.is_file() else f"does not hold its stamp {text}"
        raise CompanionError(f"body {(body or {}).get('label', (body or {}).get('pattern', 'of the rules'))!r} is "
                             f"registered in {path.name}, which {where}; correct the body's registered file and "
                             "stamp in the rules file (the file as committed, the stamp it holds).")
    return rule_commit_time(stamp, path)


def _registration(body: dict | None):
    """``(stamp, path)`` under which ``body`` was registered (see :func:`_rules_commit`)."""
    from ...base.paths import ROOT
    from ...rules.rulebook import RULES_PATH, load_rules

    reg = (body or {}).get("registered")
    if isinstance(reg, dict):
        return reg["fixed"], ROOT / reg["file"]
    return load_rules()["framework"]["fixed"], RULES_PATH

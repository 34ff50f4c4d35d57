"""The runs of rules v3's bodies, checked before any verdict reads them, and each training
claim read under v3: paired values seed by seed, the gate, the sequential reading.

A run joins its body only if it belongs there; otherwise the reading stops with one line
naming the run and the fix (nothing already landed is touched):

- it started before the rules that judge it were committed;
- its provenance records another corpus, corpus hash, learning rate or horizon than the body's;
- its configuration differs from its body's registration (:func:`registered_config`: the
  plan's command, read by ``companion train``'s own parser; :mod:`.registration`) in any field that changes what it
  learns (size, batch, schedule, optimiser, penalty, start, evaluation, ...), it did not
  train under bf16 autocast on its device, or its folder names another arm or seed than
  its configuration;
- it did not log the one-mode guard (``--guard``), or does not end at the horizon (its last
  evaluation elsewhere or missing, its last scores cut off: :func:`.registration.check_horizon`);
- its history is read from another run's files (a link), or its seed is written two ways;
- the two runs of a pair (one seed) were made on different devices.

Seeds are read in the body's order; a look needs all of its first ``n_k`` seeds, each with
both arms of the claim at the horizon (:func:`complete_seeds`).
"""

from __future__ import annotations

from ...base.phrasing import as_set, interval
from functools import lru_cache

import numpy as np
import pandas as pd

from ...base.errors import CompanionError
from ...rules.estimates import rounded
from .landed_runs import claim_pairs, machines_of, pair_machines, runs_summary, runs_table
from .registration import (REGISTERED, REGISTERED_OPTIONS, _registration, _rules_commit, check_horizon, check_registered,
                           registered_config, run_name, same_learning_config)

__all__ = ["body_runs_at_looks", "complete_seeds", "paired_values", "gate_at_look", "read_claim", "missing_runs",
           "run_name", "registered_config", "REGISTERED_OPTIONS", "runs_table", "runs_summary", "machines_of", "arm_levels", "pair_machines", "claim_pairs",
           "GUARD_QUANTITIES", "MAKE_COMMAND"]

GUARD_QUANTITIES = ("guard_seen_loss", "guard_unseen_loss", "guard_heldout_loss")
MAKE_COMMAND = "bash data/runs/make_v3_runs.sh"


def body_runs_at_looks(body: dict, rules_fixed, commit_time=None, root=None) -> pd.DataFrame | None:
    """The finished runs of a v3 ``body`` (its seeds only) with ``device`` added, or None when
    none is in; refuses (CompanionError) a run that does not belong (module docstring).
    ``rules_fixed``: the rules' stamp; ``commit_time``: their first commit (None: the stamp)."""
    from ...rules.verdicts import started_before_rule
    from ..runner.runs import load_runs, read_provenance, runs_root
    from .evidence import device_label

    root = root or runs_root()
    try:
        runs = load_runs(root=root, pattern=body["pattern"])
    except FileNotFoundError:
        return None
    _refuse_misplaced_seeds(runs, body)
    runs = runs[runs["seed"].isin(body["seeds"])]
    if runs.empty:
        return None
    devices, hashes, provs = {}, {}, {}
    for name in sorted(runs["run"].unique()):
        prov = read_provenance(root / name)
        cfg = prov.get("config") or {}
        provs[name] = prov
        started = prov.get("started")
        if not started:
            raise CompanionError(f"run {name} records no start time; a run judged by rules v3 must have started "
                                 "after them (train it with this package's `companion train`).")
        first = min((int(x.get("from_step") or 0) for x in prov.get("sittings") or []), default=0)
        if first > 0:   # resumed from a checkpoint that recorded no start: 'started' is the resume's
            raise CompanionError(f"run {name}'s first recorded sitting begins at step {first}, so when its steps 0 "
                                 f"to {first} were made is not recorded (a checkpoint made before runs recorded "
                                 "their start, resumed later), and its start may precede the rules that judge it: "
                                 "remake it from step 0, or move it out of data/runs.")
        if started_before_rule(started, rules_fixed, commit_time):
            raise CompanionError(f"run {name} started at {started}, before the rules v3 that judge it were "
                                 f"committed ({(commit_time or rules_fixed)}); it cannot be judged blind: move "
                                 "it out of data/runs or rename it outside the body's pattern.")
        wrong = [f"{k} {cfg.get(k)!r} (the body's: {v!r})" for k, v in
                 (("corpus", body["corpus"]), ("lr", body["lr"]), ("steps", body["steps"])) if cfg.get(k) != v]
        if wrong:
            raise CompanionError(f"run {name} was made with {', '.join(wrong)}; it is not a run of body "
                                 f"{body.get('label', body['pattern'])!r}: move it out of data/runs.")
        if body.get("tokenizer"):
            tok = _tokenizer_sha256(body["tokenizer"])
            got = (prov.get("data") or {}).get("tokenizer_sha256")
            if tok is not None and got != tok:
                raise CompanionError(f"run {name} was tokenized with a vocabulary of sha256 {str(got)[:12]}, not the "
                                     f"body's registered {body['tokenizer']} ({tok[:12]}); it is not a run of body "
                                     f"{body.get('label', body['pattern'])!r}: move it out of data/runs.")
        hashes[name] = (prov.get("data") or {}).get("documents_sha256")
        devices[name] = device_label(prov)
    # each run against the registration first: between two runs that differ, it tells which is off
    for name in sorted(provs):
        check_registered(name, provs[name], body, devices[name])
    same_learning_config(provs, body.get("label", body["pattern"]))
    if len(set(hashes.values())) > 1:
        first = sorted(hashes)[0]
        other = next(n for n in sorted(hashes) if hashes[n] != hashes[first])
        raise CompanionError(f"runs {first} and {other} of one body read corpora of different hashes "
                             f"({str(hashes[first])[:12]} and {str(hashes[other])[:12]}); a body is one corpus: "
                             "fetch the pinned archive again (`companion corpus fetch`) and remake the odd run.")
    have = runs.groupby("run")["quantity"].agg(set)
    need = {"guard_seen_loss", f"guard_{body['guard_reference']}_loss"}
    lacking = [n for n, q in have.items() if not need <= q]
    if lacking:
        raise CompanionError(f"run {lacking[0]} logged no one-mode memorisation guard ({sorted(need)}); rules v3 "
                             "judge only runs trained with --guard: remake it with data/runs/make_v3_runs.sh.")
    check_horizon(runs, body)
    out = runs.assign(device=runs["run"].map(devices))
    out.attrs["root"] = str(root)   # where the runs were read: the gate reads their provenance there
    return out


def _refuse_misplaced_seeds(runs: pd.DataFrame, body: dict) -> None:
    """Refuse (one line naming the folder) a run in a folder named for one of the body's runs
    (an arm and seed of it) that trained a seed the body does not list: left out with the
    body's other seeds, the seed its folder names read as missing though its folder is there."""
    arms = [*(body.get("arms") or []), *(body.get("secondary_arms") or [])]
    named = {run_name(body, a, s) for a in arms for s in body["seeds"]}
    odd = runs.loc[~runs["seed"].isin(body["seeds"]) & runs["run"].isin(named), ["run", "mode", "init", "seed"]]
    if len(odd):
        r = odd.iloc[0]
        raise CompanionError(f"run {r['run']} trained {r['mode']}/{r['init']} seed {r['seed']}, which body "
                             f"{body.get('label', body['pattern'])!r} does not list, in the folder of one of its "
                             "runs; a run is read as the arm and seed its folder names: move it out of data/runs "
                             "(or rename it, if the folder name is the mistake).")


def _runs_root_of(runs) -> "Path":
    """The folder ``runs`` were read from (:func:`body_runs_at_looks`), else ``data/runs``."""
    from pathlib import Path

    from ..runner.runs import runs_root

    where = getattr(runs, "attrs", {}).get("root")
    return Path(where) if where else runs_root()


@lru_cache(maxsize=4)
def _tokenizer_sha256(name: str) -> str | None:
    """The vocabulary digest (:func:`companion.train.text.tokens.tokenizer_sha256`) of the zoo
    tokenizer a body registers, or None where it is not installed (the check is then left to
    the corpus hash)."""
    try:
        from ..text.data import load_tokenizer
        from ..text.tokens import tokenizer_sha256

        return tokenizer_sha256(load_tokenizer(None if name == "all-minilm-l6-v2" else name))
    except Exception:   # noqa: BLE001 - a missing tokenizer package: no digest to compare
        return None


def _arm_mask(runs, arm):
    mode, init = arm.split("/")
    return (runs["mode"] == mode) & (runs["init"] == init)


def _arm_rows(runs, arm):
    return runs[_arm_mask(runs, arm)]


#: the text columns of a body's runs (:func:`companion.train.runner.runs.load_runs` and the device)
_TEXT_COLUMNS = ("quantity", "run", "mode", "init", "size", "penalty", "label", "device")


def _reading_frame(runs: pd.DataFrame | None) -> pd.DataFrame | None:
    """``runs`` with its text columns held as categories: the same rows, values and order.  A
    body's runs are some 300,000 rows (the loss and learning rate of every step); each reading
    selects an arm, a quantity and a step from them many times, and a selection copies every
    column, which for text held as Arrow strings took most of a claim's reading (20 s of the
    four claims' 30 s); as categories it copies integer codes."""
    if runs is None:
        return None
    text = [c for c in _TEXT_COLUMNS if c in runs.columns and not isinstance(runs[c].dtype, pd.CategoricalDtype)]
    return runs.astype({c: "category" for c in text}) if text else runs


def complete_seeds(runs: pd.DataFrame | None, body: dict, arms) -> list[int]:
    """The body's seeds, in its order, up to the first one missing a run of any of ``arms``."""
    if runs is None:
        return []
    have = [set(runs.loc[_arm_mask(runs, a), "seed"].unique().tolist()) for a in arms]
    out = []
    for seed in body["seeds"]:
        if any(seed not in h for h in have):
            break
        out.append(seed)
    return out


def _values(runs, arm, quantity, step):
    """One value per seed of ``arm`` (MODE/INIT) at ``step``: :func:`companion.train.studies.evidence.arm_values`,
    with a seed that has a non-finite value in any row (a layer's score, say) read as NaN
    rather than refused, so the look's gate names it as broken."""
    from .evidence import arm_values

    return arm_values(runs, quantity, *arm.split("/"), step=step, non_finite="nan").astype(float)


def paired_values(runs: pd.DataFrame, rule: dict, seeds, step: int | None = None,
                  comparator: str | None = None) -> pd.Series:
    """Per seed (in ``seeds``' order): ``sign x (candidate - comparator)`` of the rule's quantity
    at ``step`` (default the horizon).  Refuses a pair made on two devices."""
    step = rule["body_rule"]["steps"] if step is None else step
    comp = comparator or rule["comparator"]
    devices: dict = {}   # seed -> the devices of its two runs
    for a in (rule["candidate"], comp):
        pairs = runs.loc[_arm_mask(runs, a) & runs["seed"].isin(list(seeds)), ["seed", "device"]].drop_duplicates()
        for s, d in zip(pairs["seed"].tolist(), pairs["device"].tolist()):
            devices.setdefault(s, set()).add(d)
    from .evidence import UNRECORDED

    for seed in seeds:
        devs = devices.get(seed, set())
        if len(devs) > 1 or UNRECORDED in devs:   # two runs recording no device are not shown to share one
            raise CompanionError(f"seed {seed} of {rule['body']}: {rule['candidate']} and {comp} were made on "
                                 f"{'different devices' if len(devs) > 1 else 'a device not recorded'} "
                                 f"({', '.join(sorted(devs))}); a paired test compares runs made on one device, so "
                                 "remake one of them where the other was made (this package's trainer records it).")
    a = _values(runs, rule["candidate"], rule["quantity"], step)
    b = _values(runs, comp, rule["quantity"], step)
    diff = rule.get("sign", 1) * (a - b)
    return diff.reindex(list(seeds))


def gate_at_look(runs: pd.DataFrame, rule: dict, rules: dict, seeds, nominal: float) -> dict:
    """Rules v3's gate over ``seeds`` (the look's): context floor and one-mode guard for each
    arm, and the horizon part (no reversal shown between half horizon and horizon).  Returns
    ``{"passes", "parts": [...], "why"}``; ``why`` names every failed part with its numbers.
    A part that cannot be read fails with its reason, never passes by default: a seed of the
    look without its loss, guard or block count at the horizon, a guard sample with fewer
    than the rules' ``guard_blocks`` blocks (the condition for the body's reference), or no
    interval at half horizon or at the horizon."""
    from ...rules.sequential import look_estimate
    from .evidence import OBJECTIVE_OF_MODE, _shape, _unigram_reference

    g = rules["framework"]["gate"]
    body = rule["body_rule"]
    half_step, every = int(round(g["horizon_fraction"] * body["steps"])), REGISTERED["eval_every"]
    if half_step % every:   # every look would read 'not testable here', blaming the runs
        raise CompanionError(f"the gate's half horizon, horizon_fraction {g['horizon_fraction']} x {body['steps']} "
                             f"steps = step {half_step}, is no evaluation step of body {body.get('label', '')!r} "
                             f"(its runs evaluate every {every} steps); set framework.gate.horizon_fraction so "
                             "that it falls on one.")
    sub = runs[runs["seed"].isin(seeds)]
    parts, why = [], []
    for arm in (rule["candidate"], rule["comparator"]):
        rows = _arm_rows(sub, arm)
        mode = arm.split("/")[0]
        s = _shape(rows["run"].iloc[0], _runs_root_of(runs))
        ref = _unigram_reference(s["corpus"], s["seq_len"], s["top_k"], OBJECTIVE_OF_MODE[mode], s["init_from"])
        refname = body["guard_reference"]
        at_horizon = {q: _values(sub, arm, q, body["steps"]).reindex(list(seeds))
                      for q in ("eval_loss", "guard_seen_loss", f"guard_{refname}_loss",
                                "guard_seen_blocks", f"guard_{refname}_blocks")}
        lacking = {q: [int(x) for x in v.index[~np.isfinite(v.to_numpy(dtype=float))]] for q, v in at_horizon.items()}
        lacking = {q: x for q, x in lacking.items() if x}
        if lacking:   # a mean over the seeds that logged it would judge fewer seeds than the look's
            why.append(f"{arm} lacks finite values at the horizon (step {body['steps']}: "
                       + ", ".join(f"{q} for seed{'s' if len(x) > 1 else ''} {' and '.join(map(str, x))}"
                                   for q, x in lacking.items()) + ")")
            parts.append({"arm": arm, "context floor": "not read", "memorisation guard": "not read"})
            continue
        loss = float(at_horizon["eval_loss"].mean())
        below = ref - loss
        gap = float((at_horizon[f"guard_{refname}_loss"] - at_horizon["guard_seen_loss"]).mean())
        few = {q: float(v.min()) for q, v in at_horizon.items()
               if q.endswith("_blocks") and v.min() < g["guard_blocks"]}
        # compared at 10 significant digits, as interval ends are: 3.2 - 3.1 is at most 0.10, not above it
        ok_ctx, ok_mem = rounded(below) >= rounded(g["context_floor_nats"]), rounded(gap) <= rounded(g["memorisation_nats"]) and not few
        if not np.isfinite(gap):   # e.g. inf - inf: no gap can be read, so the guard cannot pass
            why.append(f"{arm}'s guard gap is not a number ({gap}) at the horizon")
        if few:   # the rules' guard_blocks: each sample at the horizon reads as many blocks as the held-out loss
            why.append(f"{arm}'s guard read too few blocks at the horizon ("
                       + ", ".join(f"{q.removeprefix('guard_').removesuffix('_blocks')} sample {n:g}"
                                   for q, n in few.items())
                       + f"; the rules ask {g['guard_blocks']} in each sample"
                       + (", the condition for the 'unseen' reference)" if "guard_unseen_blocks" in few else ")"))
        parts.append({"arm": arm, "held-out loss": loss, "unigram reference": ref, "below reference": below,
                      "context floor": "passes" if ok_ctx else "fails", "guard gap": gap,
                      "guard reference": body["guard_reference"],
                      "memorisation guard": "passes" if ok_mem else "fails"})
        if not ok_ctx:
            why.append(f"{arm} not trained enough: {below:.2f} nats below its unigram reference, the rules ask "
                       f"{as_set(g['context_floor_nats'])}")
        if rounded(gap) > rounded(g["memorisation_nats"]):
            why.append(f"{arm} trained into memorisation: its {body['guard_reference']} sample reads {gap:+.3f} "
                       f"nats above the blocks it has seen, the rules allow {as_set(g['memorisation_nats'])}")
    half = look_estimate(paired_values(runs, rule, seeds, half_step).to_numpy(), nominal)
    end = look_estimate(paired_values(runs, rule, seeds).to_numpy(), nominal)
    reversal = (not half.problem and not end.problem and
                ((half.low > 0 and end.high < 0) or (half.high < 0 and end.low > 0)))
    unread = half.problem or end.problem   # no interval at one end: a reversal could not be seen
    parts.append({"arm": "paired effect", "half horizon": half.mean, "horizon": end.mean,
                  "horizon part": "not read" if unread else "fails" if reversal else "passes"})
    if unread:
        why.append(f"the horizon part cannot be read: at step {half_step if half.problem else body['steps']} "
                   f"{half.problem or end.problem}")
    if reversal:
        why.append(f"a reversal between half horizon and horizon: the effect was "
                   f"{interval(half.low, half.high, estimate=half.mean)} at step {half_step} and "
                   f"{interval(end.low, end.high, estimate=end.mean)} at the horizon")
    failed = [p for p in parts for k, v in p.items() if k in ("context floor", "memorisation guard", "horizon part")
              and v != "passes"]
    if failed and not why:   # a part that did not pass always has its reason; never pass by default
        why.append(f"a gate part did not pass: {failed[0]}")
    return {"passes": not why, "parts": parts, "why": "; ".join(why)}


def missing_runs(body: dict, arms, seeds_needed: int, root=None) -> list[str]:
    """The runs of the first ``seeds_needed`` seeds (body order) that have not landed."""
    from ..runner.runs import runs_root

    root = root or runs_root()
    return [run_name(body, a, s) for s in body["seeds"][:seeds_needed] for a in arms
            if not (root / run_name(body, a, s) / "history.csv").exists()]


def _cached_runs(body_key: str, pattern: str, stamp: str):
    """The body's runs as :func:`body_runs_at_looks` reads them, kept while its landed files
    stay as they were (:func:`_landed_state`): a run landed, moved or copied again since is read."""
    from ..runner.runs import runs_root

    return _cached_reading(body_key, pattern, stamp, _landed_state(runs_root(), pattern))


def _landed_state(root, pattern: str) -> tuple:
    """Each landed run folder matching ``pattern`` under ``root`` with the size and time of
    change of its history and provenance: what a cached reading of the body is kept for."""
    state = []
    for d in sorted(root.glob(pattern)):
        files = []
        for name in ("history.csv", "provenance.json"):
            try:
                st = (d / name).stat()
                files.append((st.st_size, st.st_mtime_ns, st.st_ino))
            except OSError:
                files.append(None)
        if files[0] is not None:
            state.append((d.name, *files))
    return tuple(state)


@lru_cache(maxsize=8)
def _cached_reading(body_key: str, pattern: str, stamp: str, landed: tuple):
    from ...rules.rulebook import load_rules

    body = dict(load_rules()["bodies"][body_key])
    return _reading_frame(body_runs_at_looks(body, _registration(body)[0], _rules_commit(body)))


_cached_runs.cache_clear = _cached_reading.cache_clear   # forget every cached reading


def own_yardstick(runs: pd.DataFrame | None, rule: dict, seeds) -> float:
    """A yardstick read from the body's own runs (rules v4, ``read_from``) over ``seeds`` (the
    look's): version 3's rule applied to the arm it names.  ``scaled-iqr``: the paper's
    interquartile width times the arm's seed-mean layer-mean score at the horizon over the
    paper's median level of that score (Tables S2/S3); ``speedup-nats``: the arm's seed-mean
    held-out loss at ``1 - speedup`` of the horizon (linear between the two evaluations around
    it, as v2's rule reads it: :func:`.compare.value_at_step`) minus at the horizon.  NaN when
    it cannot be read (no runs, a seed of the look without a finite value): the look then
    reads 'not testable here' (a mean over the other seeds would be another look's)."""
    from .compare import value_at_step
    from .evidence import _published, published_iqr_width

    y = rule["yardstick"]
    rf = y["read_from"]
    if runs is None or not len(seeds):
        return float("nan")
    sub = runs[runs["seed"].isin(list(seeds))]
    steps = rule["body_rule"]["steps"]
    if y["rule"] == "speedup-nats":
        at = _values(sub, rf["arm"], "eval_loss", steps).reindex(list(seeds))
        loss = _arm_rows(sub, rf["arm"])
        before = value_at_step(loss[loss["quantity"] == "eval_loss"], (1 - float(y["speedup"])) * steps)
        v = float((before.reindex(list(seeds)) - at).mean(skipna=False))
    else:
        s = y["scale"]
        pub = _published()
        level = float(pub[(pub["score"] == s["score"]) & (pub["role"] == s["role"])]["median"].median())
        own = float(_values(sub, rf["arm"], rf["score"], steps).reindex(list(seeds)).mean(skipna=False))
        v = published_iqr_width(s["score"]) * abs(own) / abs(level)
    return v if np.isfinite(v) and v > 0 else float("nan")


def read_claim(key: str, rules: dict | None = None, runs: pd.DataFrame | None = None) -> dict:
    """One training claim read under rules v3 (before the fixed sequence): the sequential
    reading (every complete look gated in order, :func:`read_sequential`), the gate at the look read, the secondary comparators (unadjusted), the power at
    the planning spread and the detectable effect with its interval, and what is missing."""
    from ...rules.sequential import detectable_effect_interval, look_estimate, look_outcome, read_sequential
    from ...rules.rulebook import claim_rule, load_rules

    rules = rules if rules is not None else load_rules()
    rule = claim_rule(key, rules)
    body = rule["body_rule"]
    if runs is None:
        runs = _cached_runs(rule["body"], body["pattern"], rules["framework"]["fixed"].isoformat())
    else:
        runs = _reading_frame(runs)
    arms = (rule["candidate"], rule["comparator"])
    seeds = complete_seeds(runs, body, arms)
    values = paired_values(runs, rule, seeds) if seeds else pd.Series(dtype=float)
    gates = {}

    def gate_at(look: int) -> str:   # every complete look is gated, in order (rules v3, 'sequential')
        gates[look] = gate_at_look(runs, rule, rules, seeds[: rule["looks"][look - 1]], rule["nominal"][look - 1])
        return gates[look]["why"]

    if rule.get("yardstick", {}).get("read_from"):   # rules v4: d read at each look from the look's seeds
        sesoi = [own_yardstick(runs, rule, seeds[:n]) if len(seeds) >= n else float("nan") for n in rule["looks"]]
    else:
        sesoi = rule["d"]
    reading = read_sequential(values.to_numpy(), rule["looks"], rule["nominal"], sesoi, gate=gate_at)
    d_read = (sesoi[reading.look - 1] if reading.look else float("nan")) if isinstance(sesoi, list) else rule["d"]
    gate = gates.get(reading.look)
    next_look = next((n for n in rule["looks"] if n > len(seeds)), None)
    secondary = {}
    for comp in rule.get("secondary_comparators") or []:
        # read, unadjusted, at a look of the rules too: the claim's own look where the secondary
        # arm's seeds of it are in, else the largest earlier look they complete, at its nominal level
        s2 = complete_seeds(runs, body, (rule["candidate"], comp))
        k2 = max((k for k, n in enumerate(rule["looks"], 1) if n <= len(s2) and k <= reading.look), default=0)
        if k2:
            n2 = rule["looks"][k2 - 1]
            est = look_estimate(paired_values(runs, rule, s2[:n2], comparator=comp).to_numpy(), rule["nominal"][k2 - 1])
            d2 = sesoi[k2 - 1] if isinstance(sesoi, list) else rule["d"]
            secondary[comp] = {"seeds": n2, "look": k2, "estimate": est,
                               "outcome": look_outcome(est, d2) if np.isfinite(d2) else "not testable here"}
    est = reading.estimate
    detect = (detectable_effect_interval(est.n, est.sd, est.nominal) if est is not None and not est.problem
              else (float("nan"),) * 3)
    from ...rules.rulebook import design_table_path

    design = pd.read_csv(design_table_path(rules))
    return {"key": key, "rule": rule, "reading": reading, "gate": gate, "seeds_in": seeds, "d": d_read,
            "secondary": secondary, "detectable": detect,
            "design": design[design["claim"] == key].set_index("effect"),
            "missing": missing_runs(body, arms, next_look, _runs_root_of(runs)) if next_look and not reading.final
            else [],
            "next_look": None if reading.final else next_look}


def arm_levels(rules: dict | None = None, quantities=("symmetry", "directionality")) -> pd.DataFrame:
    """Each confirmatory body's arms at the horizon, seed-mean over the seeds in: the layer-mean
    ``quantities`` and both guard gaps (held-out minus seen, unseen minus seen loss, in nats),
    one row per (body, arm) with the seeds read.  Where a claim's effect comes from: Fig. 3a's
    encoder-minus-decoder gap is the encoders' symmetry minus the decoders', and this says which
    side moved."""
    from ...rules.rulebook import load_rules

    rules = rules if rules is not None else load_rules()
    rows = []
    for key, body in rules["bodies"].items():
        runs = _cached_runs(key, body["pattern"], _registration(body)[0].isoformat())
        if runs is None:
            continue
        for arm in [*body["arms"], *(body.get("secondary_arms") or [])]:
            vals = {q: _values(runs, arm, q, body["steps"]) for q in
                    (*quantities, "guard_seen_loss", "guard_heldout_loss", "guard_unseen_loss")}
            seeds = vals[quantities[0]].dropna().index
            if not len(seeds):
                continue
            row = {"body": body["label"], "arm": arm, "seeds": len(seeds)}
            # over every seed the row counts: a seed without the value makes it NaN, never the others' mean
            row.update({q: float(vals[q].reindex(seeds).mean(skipna=False)) for q in quantities})
            for ref in ("held-out", "unseen"):
                gap = vals[f"guard_{ref.replace('-', '')}_loss"] - vals["guard_seen_loss"]
                row[f"{ref} minus seen (nats)"] = float(gap.reindex(seeds).mean(skipna=False))
            row["guard reads"] = body["guard_reference"]
            rows.append(row)
    return pd.DataFrame(rows)



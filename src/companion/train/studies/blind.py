"""The blind matrix (data/runs/blind_plan.md): what the chapter "Fig. 3 and Table 1, decided"
shows beside the verdicts, computed here so the chapter only glues and draws.

- :func:`blind_runs`: the body's runs, the verdict seeds and the extra seeds (13-14, shown
  beside, never judged);
- :func:`gate_parts`: per arm, the two per-arm parts of rules v2's gate (context floor,
  memorisation guard) seed by seed;
- :func:`effects_by_horizon`: each claim's paired effect at steps 2,000, 5,000 and 10,000,
  with its t-interval over the verdict seeds and over all five seeds;
- :func:`table_1_speedups`: Table 1's quantity as the paper defines it (steps for the
  symmetric start to reach the baseline's final loss, censored seeds kept) and as the
  released code computes it (100% when the curves never cross);
- :func:`devices_text`, :func:`answer_parts`, :func:`meaning_3ab`: sentences for the chapter
  (one place per phrasing);
- :func:`planned_runs`, :func:`body_progress`, :func:`progress_text`: the second body
  (data/runs/second_body_plan.md), run by run in its plan's order, finished or not, so a
  half-done body is shown as what it is.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...rules.statistics import paired_t
from .evidence import arm_values, gate_why, loss_gate, memorisation_gap

BODY = "wikipedia-bert-mini-blind"

# claim key -> (quantity, candidate arm, comparator arm, sign): the effect is
# sign * (candidate - comparator), as rules v2 state each claim (Table 1: baseline minus
# symmetric start, > 0 when the symmetric start is ahead)
CLAIMS = {
    "training_symmetry": ("symmetry", ("encoder", "standard"), ("decoder", "standard"), 1),
    "training_directionality": ("directionality", ("encoder", "standard"), ("decoder", "standard"), 1),
    "symmetric_init_structure": ("symmetry", ("encoder", "symmetric"), ("encoder", "standard"), 1),
    "table_1": ("eval_loss", ("encoder", "symmetric"), ("encoder", "standard"), -1),
}
ARMS = [("encoder", "standard"), ("decoder", "standard"), ("authors-decoder", "standard"), ("encoder", "symmetric")]


def body_rule(rules=None) -> dict:
    from ...rules.rulebook import earlier_rules as load_rules   # the bodies made before the rules in force

    rules = rules if rules is not None else load_rules()
    return rules["bodies"][BODY]


def blind_runs(extra: bool = True, rules=None) -> pd.DataFrame | None:
    """The blind body's runs: its verdict seeds, plus its extra seeds when ``extra``."""
    from .evidence import body_runs

    b = body_rule(rules)
    seeds = list(b["seeds"]) + (list(b.get("extra_seeds", [])) if extra else [])
    return body_runs(dict(b, seeds=seeds))


def devices(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run: arm, seed, the device it trained on, its threads and whether it used
    bf16 autocast (from its provenance)."""
    from .evidence import run_settings

    rows = []
    for run, g in runs.groupby("run"):
        rows.append({"run": run, "mode": g["mode"].iloc[0], "init": g["init"].iloc[0], "seed": int(g["seed"].iloc[0]),
                     **run_settings(run)})
    return pd.DataFrame(rows, columns=["run", "mode", "init", "seed", "device", "threads", "bf16"])


def _how(group: pd.DataFrame, threads_matter: bool = True) -> str:
    """The recorded settings of a group of runs, e.g. 'one thread each, bf16 autocast'; only
    what every run of the group records the same way is said (a GPU run's host threads are
    not its speed, so they are left out there)."""
    parts = []
    threads = set(group["threads"].dropna()) if threads_matter else set()
    if len(threads) == 1:
        n = int(threads.pop())
        parts.append("one thread each" if n == 1 else f"{n} threads each")
    bf16 = set(group["bf16"].dropna())
    if len(bf16) == 1:
        parts.append("bf16 autocast" if bf16.pop() else "float32")
    return f" ({', '.join(parts)})" if parts else ""


def devices_text(runs: pd.DataFrame) -> str:
    """Which runs trained where, and how, as their provenance records it, e.g. 'seeds 10, 11
    of encoder/standard and decoder/standard trained on a CPU (one thread each, bf16
    autocast); 16 runs on one NVIDIA H100 (bf16 autocast)'; runs whose device is not recorded
    are counted apart, never as GPU runs."""
    from .evidence import UNRECORDED

    d = devices(runs)
    parts = []
    cpu = d[d["device"] == "CPU"]
    if len(cpu):
        arms = sorted({f"{m}/{i}" for m, i in zip(cpu["mode"], cpu["init"])})
        seeds = sorted(set(cpu["seed"]))
        parts.append(f"seeds {', '.join(map(str, seeds))} of {' and '.join(arms)} trained on a CPU{_how(cpu)}")
    for name, g in d[(d["device"] != "CPU") & (d["device"] != UNRECORDED)].groupby("device"):
        parts.append(f"{len(g)} run{'s' if len(g) > 1 else ''} on one {name}{_how(g, threads_matter=False)}")
    unknown = d[d["device"] == UNRECORDED]
    if len(unknown):
        parts.append(f"{len(unknown)} run{'s' if len(unknown) > 1 else ''} whose provenance records no device")
    return "; ".join(parts)


def pair_devices(runs: pd.DataFrame, key: str) -> pd.DataFrame:
    """Per seed with both arms of claim ``key``: the device each arm trained on and whether
    the pair shares one (a pair across devices mixes the device's effect into the claim's)."""
    _, cand, comp, _ = CLAIMS[key]
    d = devices(runs)
    rows = []
    for seed in sorted(set(d["seed"])):
        a = d[(d["seed"] == seed) & (d["mode"] == cand[0]) & (d["init"] == cand[1])]
        b = d[(d["seed"] == seed) & (d["mode"] == comp[0]) & (d["init"] == comp[1])]
        if a.empty or b.empty:
            continue
        rows.append({"seed": int(seed), "candidate": "/".join(cand), "candidate device": a["device"].iloc[0],
                     "comparator": "/".join(comp), "comparator device": b["device"].iloc[0],
                     "same device": a["device"].iloc[0] == b["device"].iloc[0]})
    return pd.DataFrame(rows, columns=["seed", "candidate", "candidate device", "comparator",
                                       "comparator device", "same device"])


def _where(device: str) -> str:
    return "a CPU" if device == "CPU" else f"one {device}"


def pair_devices_text(runs: pd.DataFrame, key: str) -> str:
    """Where claim ``key``'s pairs trained, e.g. 'seeds 10, 11 on a CPU, seed 12 on one
    NVIDIA H100 80GB HBM3' or, for pairs across devices, 'seeds 10, 11 across devices
    (encoder/standard on a CPU, encoder/symmetric on one NVIDIA H100 80GB HBM3)'."""
    t = pair_devices(runs, key)
    if t.empty:
        return "no pair made yet"
    groups = {}
    for _, r in t.iterrows():
        where = (f"on {_where(r['candidate device'])}" if r["same device"] else
                 f"across devices ({r['comparator']} on {_where(r['comparator device'])}, "
                 f"{r['candidate']} on {_where(r['candidate device'])})")
        groups.setdefault(where, []).append(r["seed"])
    return ", ".join(f"seed{'s' if len(v) > 1 else ''} {', '.join(map(str, v))} {w}" for w, v in groups.items())


def gate_parts(runs: pd.DataFrame, rules=None) -> pd.DataFrame:
    """Per arm: seeds, final held-out loss, its unigram reference and the margin below it
    (the rules' context floor), and the memorisation gap (held-out minus training loss, against
    the rules' memorisation guard) as mean, smallest and largest over seeds."""
    from ...rules.rulebook import earlier_rules as load_rules   # the bodies made before the rules in force

    rules = rules if rules is not None else load_rules()
    g = rules["framework"]["gate"]
    floor, guard = float(g["context_floor_nats"]), float(g["memorisation_nats"])
    present = [a for a in ARMS if not runs[(runs["mode"] == a[0]) & (runs["init"] == a[1])].empty]
    ctx = loss_gate(runs, present, floor)["arms"]
    rows = []
    for m, i in present:
        gap = memorisation_gap(runs, m, i)
        rows.append({"arm": f"{m}/{i}", "seeds": len(gap), "final held-out loss": ctx[(m, i)]["loss"],
                     "unigram reference": ctx[(m, i)]["reference"], "below the reference": ctx[(m, i)]["below"],
                     "context floor": "passes" if ctx[(m, i)]["below"] >= floor else "fails",
                     "memorisation gap (mean)": float(gap.mean(skipna=False)),
                     "(smallest)": float(gap.min(skipna=False)), "(largest)": float(gap.max(skipna=False)),
                     # a seed without a gap fails, as the gate fails it (rules v2.3)
                     "memorisation guard": "passes" if gap.mean(skipna=False) <= guard else "fails"})
    return pd.DataFrame(rows)


def effect(runs: pd.DataFrame, key: str, step: int | None = None, level: float = 0.95):
    """The paired effect of claim ``key`` (an :class:`~companion.rules.statistics.Estimate`) at ``step``
    (None: each run's last step) over the seeds of ``runs``."""
    q, cand, comp, sign = CLAIMS[key]
    a, b = arm_values(runs, q, *cand, step=step), arm_values(runs, q, *comp, step=step)
    return paired_t(a, b, level) if sign > 0 else paired_t(b, a, level)


def effects_by_horizon(runs: pd.DataFrame, verdict_seeds, steps=(2000, 5000, 10000), level: float = 0.95) -> pd.DataFrame:
    """Each claim's paired effect at each step: over the verdict seeds (what rules v2 judge at
    the last step) and over every seed of ``runs`` (the extra seeds beside)."""
    rows = []
    judged = runs[runs["seed"].isin(verdict_seeds)]
    for key in CLAIMS:
        for step in steps:
            for label, sub in (("verdict seeds", judged), ("all seeds", runs)):
                est = effect(sub, key, step, level)
                rows.append({"claim": key, "step": int(step), "seeds": label, "n": est.n, "estimate": est.mean,
                             "low": est.low, "high": est.high})
    return pd.DataFrame(rows)


def table_1_speedups(runs: pd.DataFrame, window: int = 3) -> tuple[pd.DataFrame, dict]:
    """Per seed with both encoder arms: the speed-up as the paper defines it (1 - steps for
    the symmetric start to reach the baseline's final smoothed loss / the baseline's steps;
    NaN when it never does: censored) and as the released code computes it (1.0 when the
    curves never cross); the censored median with its distribution-free interval."""
    from .speedup import authors_speedup_from_histories, censored_median_speedup, speedup_over_seeds

    enc = runs[runs["mode"] == "encoder"]
    pairs = {}
    for seed, g in enc.groupby("seed"):
        base, cand = g[g["init"] == "standard"], g[g["init"] == "symmetric"]
        if base.empty or cand.empty:
            continue
        pairs[int(seed)] = (base, cand)
    table, _ = speedup_over_seeds(pairs, window)
    table["authors' code"] = [authors_speedup_from_histories(b, c) for b, c in (pairs[s] for s in table["seed"])]
    summary = censored_median_speedup(table["speedup"].to_numpy(dtype=float))
    return table, summary


def answer_parts(verdicts: dict, tests: dict, gates: pd.DataFrame, rules=None) -> dict:
    """The chapter's answer box, piece by piece (the chapter glues each piece; the statuses
    are glued separately so the page can set them in bold).  ``verdicts``: claim key ->
    Verdict; ``tests``: claim key -> its primary test row (``training_tests``); ``gates``:
    :func:`gate_parts`.  Keys: ``st_KEY`` (status), ``me_KEY`` (estimate and interval; where
    rules v3 has read the claim at a look, v3's reading with v2's test after it) for
    each claim, and ``why`` (which gate part failed, and by how much; empty when none), its
    thresholds read from the rules (``rules``, default ``data/verdict_rules.yaml``)."""
    from ...base.phrasing import as_set
    from ...rules.rulebook import earlier_rules as load_rules   # the bodies made before the rules in force

    g_rule = (rules if rules is not None else load_rules())["framework"]["gate"]
    floor, guard = float(g_rule["context_floor_nats"]), float(g_rule["memorisation_nats"])
    out = {}
    for key in CLAIMS:
        v = verdicts[key]
        out[f"st_{key}"] = v.status
        # the claim's reading under the rules in force; the earlier bodies' tests are tabled beside
        out[f"me_{key}"] = v.measured
    out["decided_on"] = decided_on(tests)
    failing = gates[(gates["context floor"] == "fails") | (gates["memorisation guard"] == "fails")]
    why = []
    for _, g in failing.iterrows():
        if g["memorisation guard"] == "fails":
            why.append(f"the {g['arm']} runs memorise their training text: held-out minus training loss "
                       f"{g['memorisation gap (mean)']:+.2f} nats on average over {g['seeds']} seeds "
                       f"(smallest {g['(smallest)']:+.2f}), where the rules allow at most {as_set(guard, 2, sign=True)}")
        if g["context floor"] == "fails":
            why.append(f"the {g['arm']} runs end only {g['below the reference']:.2f} nats below their unigram "
                       f"reference, where the rules need {as_set(floor, 2)}")
    out["why"] = "; ".join(why) or "every part passes"
    return out


def _seeds_interval(r) -> str:
    """'95% t-interval -0.100 to +0.300, 3 seeds', or 'one seed, no interval' for a test row."""
    from ...base.phrasing import interval

    return interval(r["low"], r["high"], n=int(r["n"]))


FIGURES = {"training_symmetry": "Fig. 3a", "training_directionality": "Fig. 3b",
           "symmetric_init_structure": "Fig. S5b", "table_1": "Table 1"}


def decided_on(tests: dict) -> str:
    """Which body each claim's verdict is read on (rules v2.1: the confirmatory body decides
    only when the first body's gate failed and its own passed), e.g. 'every verdict on
    Wikipedia, BERT-Mini, 10,000 steps (blind)' or 'Figs. 3a, 3b on English mix, ...
    (the first body's gate failed); Table 1, Fig. S5b on Wikipedia, ...'."""
    groups = {}
    for key in CLAIMS:
        r = tests[key]
        tag = r["body"] + (" (the first body's gate failed)" if r.get("decided_by") == "confirmatory" else "")
        groups.setdefault(tag, []).append(FIGURES[key])
    if len(groups) == 1:
        return f"every verdict on {next(iter(groups))}"
    return "; ".join(f"{', '.join(figs)} on {body}" for body, figs in groups.items())


def _interval(r) -> str:
    return f"{r['estimate']:+.3f} ({_seeds_interval(r)})"


def meaning_3ab(tests: dict, second: dict, signs: dict, min_seeds: int = 3) -> str:
    """The opening of the chapter's "What this means for the paper" for Figs. 3a/3b, true in
    each state of the second body.  ``tests``: claim key -> the row the verdict reads (the
    confirmatory row when the second body decided); ``second``: claim key -> the second
    body's test row against the true decoder, or None; ``signs``: ``{"3a": "3 of 3", ...}``,
    the first body's seeds in the paper's direction.  Three states: the second body decided
    (its statuses and effects come first, the first body's signs follow as context); the
    second body is complete but its gate failed (both reasons); the second body is not
    complete yet (the first body's description, and what is pending).  The bodies are the
    earlier rules' (version 2): the sentence gives their effects and gates, never a status word
    (each claim's one status is the one its readings at looks give; version 2's readings are on
    the page "How the rules changed")."""
    keys = ("training_symmetry", "training_directionality")
    first = (f"on Wikipedia, at the largest horizon that corpus allows, the encoder ends more symmetric than "
             f"the true decoder in {signs['3a']} seeds and less column-dominant in {signs['3b']}, the "
             "paper's direction, but there the decoder, besides learning the language, has memorised its "
             "training text, so the rules do not let that comparison decide")
    decided = [k for k in keys if tests[k].get("decided_by") == "confirmatory"]
    if decided:
        parts = "; ".join(f"for {FIGURES[k]}, encoder minus decoder {_interval(tests[k])}" for k in decided)
        tail = ""
        for k in keys:
            if k in decided:
                continue
            r = second.get(k)
            why = (f"the second body's gate fails for it ({gate_why(r)})"
                   if r is not None and int(r["n"]) >= min_seeds and not bool(r["gate"])
                   else "the second body does not decide it")
            tail += f" {FIGURES[k]} is not read there: {why}."
        return (f"On the second corpus, which the decoder does not memorise, the earlier bodies give: {parts}."
                f"{tail} Beside it, {first}.")
    done = [k for k in keys if second.get(k) is not None and int(second[k]["n"]) >= min_seeds]
    if len(done) == len(keys):
        reasons = sorted({str(second[k]["gate_reason"]) for k in keys if not bool(second[k]["gate"])})
        why = "; ".join(r for r in reasons if r) or "its gate failed"
        return (f"{first[0].upper()}{first[1:]}. The second corpus did not settle it either: with all "
                f"{min_seeds} deciding seeds its gate fails ({why}), so that body does not read Figs. 3a and 3b.")
    return (f"{first[0].upper()}{first[1:]}. The second, larger corpus decides "
            f"Figs. 3a and 3b once both arms have finished at {min_seeds} deciding seeds and its gate passes.")


def second_gate_text(second: dict, min_seeds: int = 3) -> str:
    """The second body's gate in a clause for the answer box: empty until both arms are in at
    ``min_seeds`` seeds (no gate is read before), else whether it passes for Figs. 3a/3b and,
    where not, the reason per figure.  ``second``: claim key -> its test row, or None."""
    keys = ("training_symmetry", "training_directionality")
    rows = {k: second.get(k) for k in keys}
    if any(r is None or int(r["n"]) < min_seeds for r in rows.values()):
        return ""
    failed = {k: r for k, r in rows.items() if not bool(r["gate"])}
    if not failed:
        return "; its gate passes for Figs. 3a and 3b"
    return "; its gate fails for " + "; ".join(
        f"{FIGURES[k]} ({gate_why(r)})" for k, r in failed.items())


def memorisation_curves(runs: pd.DataFrame) -> pd.DataFrame:
    """Per arm, seed and evaluation step: held-out loss minus the training loss averaged over
    the steps since the previous evaluation (the quantity of rules v2's memorisation guard,
    at every evaluation instead of the last one only)."""
    rows = []
    for (mode, init, seed), g in runs.groupby(["mode", "init", "seed"]):
        ev = g[g["quantity"] == "eval_loss"].sort_values("step")
        tr = g[g["quantity"] == "train_loss"].sort_values("step")
        steps = ev["step"].to_numpy()
        for before, step, loss in zip(steps[:-1], steps[1:], ev["value"].to_numpy()[1:]):
            w = tr[(tr["step"] > before) & (tr["step"] <= step)]["value"]
            if len(w):   # a step's NaN loss is not passed over: the gap reads NaN, as the guard's does
                rows.append({"arm": f"{mode}/{init}", "seed": int(seed), "step": int(step),
                             "gap": float(loss - w.mean(skipna=False))})
    return pd.DataFrame(rows)


def _provenance_of(runs: pd.DataFrame) -> dict:
    """The provenance of the body's first run (shared settings: data, batch, schedule)."""
    from .evidence import _provenance

    return _provenance(sorted(runs["run"].unique())[0])


SECOND_BODY = "english-mix-bert-mini-blind"


def planned_runs(body_key: str = SECOND_BODY, rules=None) -> pd.DataFrame:
    """The runs a body's plan asks for, in the plan's order (second_body_plan.md, 'Order'):
    the encoder and the true decoder over the deciding seeds, seed by seed; the authors'
    decoder over the same seeds; then the encoder and the true decoder over the extra seeds.
    Columns: ``run`` (its folder name), ``mode``, ``init``, ``seed`` and ``role``
    (``decides``, ``comparator beside`` or ``extra seed``)."""
    from ...rules.rulebook import earlier_rules as load_rules   # the bodies made before the rules in force

    rules = rules if rules is not None else load_rules()
    if body_key not in rules["bodies"]:
        raise ValueError(f"no body {body_key!r} in the rules file; bodies: {sorted(rules['bodies'])}")
    b = rules["bodies"][body_key]
    prefix = b["pattern"].rstrip("*")
    pair = [("encoder", "standard"), ("decoder", "standard")]
    order = ([(m, i, s, "decides") for s in b["seeds"] for m, i in pair]
             + [("authors-decoder", "standard", s, "comparator beside") for s in b["seeds"]]
             + [(m, i, s, "extra seed") for s in b.get("extra_seeds", []) for m, i in pair])
    return pd.DataFrame([{"run": f"{prefix}{m}-{i}-s{s}", "mode": m, "init": i, "seed": int(s), "role": role}
                         for m, i, s, role in order])


def body_progress(body_key: str = SECOND_BODY, rules=None) -> pd.DataFrame:
    """:func:`planned_runs` with, per run, ``finished`` (its ``history.csv`` is cached: the
    run script writes it last; and, where the body states its horizon ``steps``, its last
    evaluation is there: a history cut off before it is a run still to finish) and ``last step``
    (the last evaluation logged; NaN when none is cached)."""
    from ...rules.rulebook import earlier_rules as load_rules
    from ..runner.runs import runs_root

    horizon = ((rules if rules is not None else load_rules())["bodies"].get(body_key) or {}).get("steps")
    t = planned_runs(body_key, rules)
    steps = []
    for run in t["run"]:
        h = runs_root() / run / "history.csv"
        if not h.is_file():
            steps.append(float("nan"))
            continue
        ev = pd.read_csv(h)
        ev = ev[ev["quantity"] == "eval_loss"]
        steps.append(float(ev["step"].max()) if len(ev) else float("nan"))
    return t.assign(finished=[s == s and (horizon is None or s == float(horizon)) for s in steps],
                    **{"last step": steps})


def progress_text(progress: pd.DataFrame, min_seeds: int = 3) -> str:
    """One sentence: how many planned runs are cached, and how many of the deciding seeds
    have both arms (a verdict needs ``min_seeds`` of them)."""
    done = progress[progress["finished"]]
    deciding = progress[progress["role"] == "decides"]
    complete = [s for s, g in deciding.groupby("seed") if g["finished"].all()]
    n_seeds = deciding["seed"].nunique()
    if done.empty:
        return (f"none of the {len(progress)} planned runs has finished yet; a verdict needs both arms "
                f"at {min_seeds} of the {n_seeds} deciding seeds")
    seeds = ", ".join(str(s) for s in complete) if complete else "none yet"
    return (f"{len(done)} of the {len(progress)} planned runs {'has' if len(done) == 1 else 'have'} finished; deciding seeds with both "
            f"arms: {seeds} ({len(complete)} of the {min_seeds} a verdict needs)")

"""Every landed run of rules v3's bodies as a table, read from each run's provenance alone
(:func:`runs_table`, folded by :func:`runs_summary`), the machines its sittings met
(:func:`machines_of`) and each claim's pairs of runs (:func:`claim_pairs`,
:func:`pair_machines`).  What a page shows about how the runs were made; the checks that admit
a run to a verdict are :func:`companion.train.studies.registered_bodies.body_runs_at_looks`'s."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .registration import _registration, _rules_commit, run_name

__all__ = ["machines_of", "runs_table", "runs_summary", "claim_pairs", "pair_machines"]


def machines_of(provenance: dict) -> str:
    """The machines a run's steps were made on, from its provenance's ``sittings``: each
    distinct CPU model (with its bf16 features) and the step it began at, or 'not recorded'
    for steps made before runs recorded their machine.  Two CPU machines are two devices for
    the last bits of a bf16 step (data/runs/cpu_machine_check), so a pair made across sittings
    may have met two machines even where its device reads 'CPU' throughout."""
    sittings = provenance.get("sittings") or [{"from_step": 0, "cpu_model": "not recorded"}]
    seen, parts = [], []
    for s in sittings:
        model = str(s.get("cpu_model") or "not recorded")
        feats = [f for f in s.get("cpu_bf16_features") or []]
        label = model if model == "not recorded" or not feats else f"{model} ({', '.join(feats)})"
        if seen and seen[-1] == label:
            continue   # a resume on the machine it paused on
        seen.append(label)
        parts.append(label if len(parts) == 0 and int(s.get("from_step", 0)) == 0
                     else f"from step {int(s.get('from_step', 0)):,}: {label}")
    return "; ".join(parts)


def runs_table(rules: dict | None = None, root=None) -> pd.DataFrame:
    """Every landed run of rules v3's bodies with its settings and provenance, one row per run:
    ``body``, ``run``, ``arm`` (MODE/INIT), ``seed``, ``device``, ``machines``
    (:func:`machines_of`), ``started`` (UTC), ``after rules (h)`` (hours from the rules' first
    commit, never before their stamp, to the run's start: :func:`companion.rules.verdicts.rule_anchor`; a run
    judged blind has it > 0), ``steps`` (the horizon),
    ``training tokens``, ``passes`` (steps x batch x block length / training tokens; NaN where the
    provenance gives one of them not),
    ``corpus sha256`` (first 12 hex digits of the documents' hash), ``hours`` (wall clock,
    every sitting), ``s/step`` (wall clock per step: it counts the time a run was paused or
    shared its core) and ``CPU s/step`` (the process's CPU seconds per step, a run on the CPU
    only: with one thread this is the compute a step took, pauses left out; NaN on a GPU,
    whose work the host's CPU time does not measure).  Read from each run's ``provenance.json`` alone; the checks
    that admit a run to a verdict are :func:`body_runs_at_looks`'s."""
    import datetime as _dt

    from ...rules.rulebook import load_rules
    from ...rules.verdicts import _as_datetime, rule_anchor
    from ..runner.provenance import provenance_count, provenance_seconds
    from ..runner.runs import read_provenance, runs_root
    from .evidence import device_label

    rules = rules if rules is not None else load_rules()
    root = Path(root) if root is not None else runs_root()
    rows = []
    for key, body in rules["bodies"].items():
        # hours after the first commit of the rules that registered the body (its own file and stamp),
        # and never before the stamp: the moment the blind check compares a start with
        commit = rule_anchor(_registration(body)[0], _rules_commit(body))
        arms = [*body["arms"], *(body.get("secondary_arms") or [])]
        for seed in body["seeds"]:
            for arm in arms:
                name = run_name(body, arm, seed)
                if not (root / name / "history.csv").is_file():
                    continue
                prov = read_provenance(root / name)
                cfg, data = prov.get("config") or {}, prov.get("data") or {}
                started = prov.get("started")
                after = ((_as_datetime(started) - _as_datetime(commit)) / _dt.timedelta(hours=1)
                         if started else float("nan"))
                steps, batch, tokens, seq = (provenance_count(part, key, root / name) for part, key in (
                    (cfg, "steps"), (cfg, "batch_size"), (data, "train_tokens"), (data, "seq_len")))
                hours, per_step = (provenance_seconds(prov, key, root / name) for key in ("duration_s", "seconds_per_step"))
                rows.append({"body": key, "run": name, "arm": arm, "seed": seed,
                             "device": device_label(prov),
                             "machines": machines_of(prov), "started": started or "not recorded",
                             "after rules (h)": after, "steps": steps, "training tokens": tokens,
                             # a count the provenance does not give is no count of 0 (passes 0.00)
                             "passes": steps * batch * seq / tokens if min(steps, batch, seq, tokens) > 0
                             else float("nan"),
                             "corpus sha256": str(data.get("documents_sha256", "?"))[:12],
                             "hours": hours / 3600, "s/step": per_step,
                             "CPU s/step": _cpu_seconds_per_step(prov, steps)})
    columns = ["body", "run", "arm", "seed", "device", "machines", "started", "after rules (h)", "steps",
               "training tokens", "passes", "corpus sha256", "hours", "s/step", "CPU s/step"]
    return pd.DataFrame(rows, columns=columns)


def runs_summary(table: pd.DataFrame) -> pd.DataFrame:
    """The landed runs of :func:`runs_table` folded to one row per body and arm, so that a
    page showing it keeps its size as runs land: ``runs``, ``seeds`` (runs of consecutive
    seeds as ranges, ``30–34, 36``), ``devices``, ``first start after rules (h)`` (the smallest lead: a body judged
    blind has it > 0; NaN where a run records no start), ``corpus sha256`` (the hashes of its runs; one per body), ``passes``,
    and the medians of ``hours``, ``s/step`` and ``CPU s/step`` (NaN where no run has it).
    The per-run rows stay in :func:`runs_table`."""
    columns = ["body", "arm", "runs", "seeds", "devices", "first start after rules (h)", "corpus sha256",
               "passes", "median hours", "median s/step", "median CPU s/step"]
    rows = []
    for (body, arm), g in table.groupby(["body", "arm"], sort=False):
        rows.append({"body": body, "arm": arm, "runs": len(g),
                     "seeds": _seed_ranges(g["seed"]),
                     "devices": ", ".join(sorted(set(g["device"]))),
                     # a run recording no start shows none: the smallest of the others' leads hid it
                     "first start after rules (h)": g["after rules (h)"].min(skipna=False),
                     "corpus sha256": ", ".join(sorted(set(g["corpus sha256"]))),
                     "passes": ", ".join(f"{p:.2f}" for p in sorted(set(g["passes"].round(2)))),
                     "median hours": g["hours"].median(),
                     "median s/step": g["s/step"].median(),
                     "median CPU s/step": g["CPU s/step"].median()})
    return pd.DataFrame(rows, columns=columns)


def _seed_ranges(seeds) -> str:
    """``30–32, 34`` for the seeds 30, 31, 32 and 34 (in any order; an en dash joins a range)."""
    out, run = [], []
    for s in sorted(set(int(x) for x in seeds)):
        if run and s != run[-1] + 1:
            out.append(run)
            run = []
        run.append(s)
    if run:
        out.append(run)
    return ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in out)


def _cpu_seconds_per_step(prov: dict, steps: int) -> float:
    """CPU seconds per step of a run made on the CPU (NaN for another device, a run that did
    not record its CPU time, or no steps)."""
    from .evidence import device_label

    cpu = prov.get("cpu_seconds")
    if device_label(prov) != "CPU" or not isinstance(cpu, (int, float)) or steps <= 0:
        return float("nan")
    return float(cpu) / steps


def claim_pairs(rules: dict | None = None) -> dict:
    """``{body: [(candidate, comparator), ...]}``: the pairs of arms the claims compare in each
    body, in the rules' order (a secondary arm, which no claim's look reads, is in none).  What
    a sentence on how far apart a pair's runs started counts
    (:func:`companion.judge.sentences.training_runs_said`), as :func:`pair_machines` does."""
    from ...rules.rulebook import load_rules

    rules = rules if rules is not None else load_rules()
    out: dict = {}
    for r in rules["claims"].values():
        pair = (r["candidate"], r["comparator"])
        if pair not in out.setdefault(r["body"], []):
            out[r["body"]].append(pair)
    return out


def pair_machines(table: pd.DataFrame, rules: dict | None = None) -> pd.DataFrame:
    """Each claim's pairs (one seed, its candidate and comparator) with the machines every
    sitting of each run was made on (:func:`runs_table`'s ``machines``) and how far apart
    the two runs started, in hours: one row per (claim, seed) whose two runs have landed."""
    from ...rules.rulebook import load_rules
    from ...rules.verdicts import _as_datetime

    rules = rules if rules is not None else load_rules()
    by_run = table.set_index("run")
    rows = []
    for key, r in rules["claims"].items():
        body = rules["bodies"][r["body"]]
        for seed in body["seeds"]:
            a, b = run_name(body, r["candidate"], seed), run_name(body, r["comparator"], seed)
            if a not in by_run.index or b not in by_run.index:
                continue
            ta, tb = by_run.loc[a, "started"], by_run.loc[b, "started"]
            apart = (abs((_as_datetime(ta) - _as_datetime(tb)).total_seconds()) / 3600
                     if "not recorded" not in (ta, tb) else float("nan"))
            rows.append({"claim": r["claim"].split(":")[0], "seed": seed,
                         "candidate machines": by_run.loc[a, "machines"],
                         "comparator machines": by_run.loc[b, "machines"],
                         "one machine model": by_run.loc[a, "machines"] == by_run.loc[b, "machines"],
                         "started apart (h)": apart})
    return pd.DataFrame(rows)

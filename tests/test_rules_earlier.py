"""Rules v2: the blind bodies were made after the rules that judge them, and the yardsticks
are what the rules say they are."""

from __future__ import annotations

import datetime as dt
import fnmatch

import numpy as np
import pandas as pd
import pytest

from companion.train.studies import evidence
from companion.train.runner.runs import runs_root
from companion.rules.rulebook import RULES_HISTORY
from companion.rules.rulebook import load_rules
from companion.rules.verdicts import rule_commit_time, started_before_rule


def _blind_bodies(rules):
    return {k: b for k, b in rules["bodies"].items() if b.get("blind")}


def test_every_run_of_a_blind_body_started_after_its_rules_were_committed():
    rules = load_rules(RULES_HISTORY[2])
    blind = _blind_bodies(rules)
    assert blind, "rules v2 name at least one blind body"
    judging = {k: [c for c, r in rules["claims"].items()
                   if k in [r.get("primary", {}).get("body"), (r.get("confirmatory") or {}).get("body")]
                   + list(r.get("secondary_bodies", []))]
               for k in blind}

    def stamp(claim, body):  # a confirmatory body is judged from its own, later stamp (rules v2.1)
        r = rules["claims"][claim]
        conf = r.get("confirmatory") or {}
        return max(r["fixed"], conf["fixed"]) if conf.get("body") == body else r["fixed"]

    checked = 0
    for key, body in blind.items():
        assert judging[key], f"blind body {key} is judged by no rule"
        latest = max(stamp(c, key) for c in judging[key])
        latest = max(latest, rules["framework"]["gate"]["fixed"])
        commit = rule_commit_time(latest, RULES_HISTORY[2])  # the file that fixed it; None outside a git checkout
        names = [p.name for p in runs_root().iterdir() if p.is_dir() and fnmatch.fnmatch(p.name, body["pattern"])]
        for name in names:
            prov = (runs_root() / name / "provenance.json")
            if not prov.exists():
                continue
            import json

            started = json.loads(prov.read_text()).get("started")
            assert started, f"{name}: a blind run must record when it started"
            assert not started_before_rule(started, latest, commit), (
                f"{name} started at {started}, before its rules were committed ({commit or latest})")
            checked += 1
    print(f"{checked} blind run(s) checked")


def test_the_check_flags_a_run_that_started_before_its_rule():
    fixed = dt.datetime(2026, 11, 26, 21, 54, tzinfo=dt.timezone.utc)
    commit = fixed + dt.timedelta(seconds=41)
    assert started_before_rule("2026-11-26T21:54:20Z", fixed, commit)        # after the stamp, before the commit
    assert not started_before_rule("2026-11-26T21:55:00Z", fixed, commit)
    assert started_before_rule("2026-11-26T21:53:00Z", fixed, None)          # no history: the stamp decides


def test_every_blind_body_plan_was_committed_before_the_first_run_of_its_body():
    import json
    import subprocess

    from companion.rules.verdicts import RULES_PATH, _as_datetime

    checked = 0
    for key, body in _blind_bodies(load_rules(RULES_HISTORY[2])).items():
        out = subprocess.run(["git", "log", "--reverse", "--format=%cI", "--", body["plan"]],
                             cwd=RULES_PATH.parents[1], capture_output=True, text=True)
        lines = [ln for ln in out.stdout.splitlines() if ln.strip()] if out.returncode == 0 else []
        if not lines:
            pytest.skip("no git history here: the provenance stamps were checked above")
        plan = _as_datetime(lines[0])
        starts = [json.loads(p.read_text())["started"] for p in runs_root().glob(body["pattern"] + "/provenance.json")]
        assert all(_as_datetime(s) > plan for s in starts), (key, plan, sorted(starts)[:1])
        checked += len(starts)
    print(f"{checked} blind run(s) checked against their plans")


def test_the_published_yardsticks_are_still_what_they_were_when_the_rules_were_fixed():
    y = load_rules(RULES_HISTORY[2])["yardsticks"]["published-iqr-width"]["value_when_fixed"]
    for score, value in y.items():
        assert evidence.published_iqr_width(score) == pytest.approx(value)
    # independently: the median printed IQR width over the published text rows, read from the CSVs
    from companion.zoo.catalog import DATA_DIR, load_catalog

    cat = load_catalog(DATA_DIR / "catalog.csv").set_index("key")
    rows = pd.read_csv(DATA_DIR / "published" / "printed_rows.csv", dtype={"row_note": str}).fillna({"row_note": ""})
    for table, score in (("S2", "symmetry"), ("S3", "directionality")):
        name = "table_S2_symmetry.csv" if table == "S2" else "table_S3_directionality.csv"
        t = pd.read_csv(DATA_DIR / "published" / name).merge(rows[rows["table"] == table], on=["row", "column"])
        t = t[(t["row_note"] == "") & (t["key"].map(cat["modality"]) == "text")]
        assert float(np.median(t["iqr_below"] + t["iqr_above"])) == pytest.approx(y[score])


def test_table_1_s_yardstick_is_the_baseline_s_last_26_percent_in_nats():
    # a power-law curve logged every 250 steps: the yardstick is L(7,400) - L(10,000), up to
    # the linear interpolation between the logged steps 7,250 and 7,500
    steps = np.arange(0, 10_001, 250)
    curve = lambda t: 3.0 + 5.0 * (1 + t) ** -0.3  # noqa: E731
    runs = pd.DataFrame([("b", "encoder", "standard", s, int(st), "eval_loss", -1, -1, curve(st) + 0.01 * s)
                         for s in (10, 11) for st in steps],
                        columns=["run", "mode", "init", "seed", "step", "quantity", "layer", "head", "value"])
    runs["run"] = runs["run"] + runs["seed"].astype(str)
    got = evidence.speedup_nats(runs, 0.26)
    exact = curve(7400) - curve(10_000)
    assert got == pytest.approx(exact, rel=0.01) and got > 0


def _tests(primary_gate, conf_gate, conf_n=3):
    from companion.judge.empirical import apply_confirmatory

    t = pd.DataFrame([
        {"body_key": "wiki", "comparator": "decoder", "primary": True, "role": "primary", "gate": primary_gate,
         "n": 3, "outcome": "not testable here" if not primary_gate else "holds"},
        {"body_key": "mix", "comparator": "decoder", "primary": False, "role": "confirmatory", "gate": conf_gate,
         "n": conf_n, "outcome": "holds" if conf_gate else "not testable here"},
        {"body_key": "old", "comparator": "decoder", "primary": False, "role": "secondary", "gate": True,
         "n": 3, "outcome": "refuted"}])
    r = {"confirmatory": {"body": "mix", "comparator": "decoder"}, "min_seeds": 3}
    return apply_confirmatory(t, r)


@pytest.mark.parametrize("primary_gate, conf_gate, conf_n, decides", [
    (False, True, 3, "mix"),     # the primary body's gate failed, the confirmatory body's passed: it decides
    (True, True, 3, "wiki"),     # the primary body passed: it decides, whatever the other says
    (False, False, 3, "wiki"),   # both failed: the primary row stays ('not testable here')
    (False, True, 2, "wiki"),    # too few confirmatory seeds: no switch
])
def test_the_confirmatory_body_decides_only_when_the_primary_gate_failed_and_its_own_passed(
        primary_gate, conf_gate, conf_n, decides):
    t = _tests(primary_gate, conf_gate, conf_n)
    assert t["primary"].sum() == 1                      # exactly one row decides
    assert t.loc[t["primary"], "body_key"].item() == decides
    assert (t["body_key"] == "old").any() and not t.loc[t["body_key"] == "old", "primary"].item()

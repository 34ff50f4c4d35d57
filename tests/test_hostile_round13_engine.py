"""Hardening round 13 (issue 74): the judge engine and the training studies that feed it, where
runs become evidence and evidence becomes a verdict.

(a) A look read from a history with a partial row set (a layer missing at the horizon): the
run reader refuses it before any arm value is formed (rows built by hand bypass the reader,
so the arm-value helpers are not probed with them).
(b) Yardsticks and curves read on the step grid the runs log: a look's Table 1 yardstick at
74% of the horizon (between two logged evaluations), a seed without a number there, runs
logging different steps, ordered pairs holding NaN.
(c) Premises on edge inputs: a share exactly at one half with no spread, p-values outside
[0, 1], a share given without its p-value pair, NaN seeds; the exact rank test against
enumeration; Holm against a hand computation.
(d) The blind check fed a renamed or amended registration; bodies whose runs differ in a
field that changes learning.
(e) Verdict records read back with edited fields; the premise corpus's vocabulary restriction
on ids it cannot remap.

Each case states the right behaviour: the value computed apart from the code under test, or a
one-line refusal naming the input."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from companion.base.errors import CompanionError
from one_line import one_line as _one_line

COLUMNS = ["run", "mode", "init", "seed", "step", "quantity", "layer", "head", "value"]


def _runs(seeds, steps, value, *, mode="encoder", init="standard", quantity="eval_loss", layers=(-1,)):
    """A body's runs as :func:`companion.train.runner.runs.load_runs` gives them: one run per
    seed, ``value(seed, step, layer)`` at every step and layer."""
    rows = [(f"b-{mode}-{init}-s{s}", mode, init, s, int(t), quantity, layer, -1, float(value(s, t, layer)))
            for s in seeds for t in steps for layer in layers]
    return pd.DataFrame(rows, columns=COLUMNS)


@pytest.fixture(scope="module")
def rules():
    """The rules in force, read once (a read takes about a second on the shared machine)."""
    from companion.rules.rulebook import load_rules

    return load_rules()


def _structure_body(seeds=(1, 2, 3), steps=(5000, 10000)):
    """Symmetry at four layers (layer l reads 0.1 (l + 1) + 0.01 seed) with an eval loss at each
    step."""
    sym = _runs(seeds, steps, lambda s, t, l: 0.1 * (l + 1) + 0.01 * s, quantity="symmetry", layers=(0, 1, 2, 3))
    return pd.concat([sym, _runs(seeds, steps, lambda s, t, l: 4.0)], ignore_index=True)


# ============================================================ (a) partial row sets

@pytest.fixture
def v3_body(tmp_path, monkeypatch):
    """A v3 English-mix body in a temporary runs folder (unigram reference fixed at 8 nats)."""
    import companion.train.runner.runs as runs
    import companion.train.studies.evidence as ev

    monkeypatch.setattr(runs, "runs_root", lambda: tmp_path)
    monkeypatch.setattr(ev, "_unigram_reference", lambda *a, **k: 8.0)
    return tmp_path


def _read_v3(rules, key="training_symmetry"):
    from companion.train.studies.registered_bodies import _registration, body_runs_at_looks, read_claim

    body = rules["bodies"]["english-mix-v3"]
    return read_claim(key, rules, runs=body_runs_at_looks(body, _registration(body)[0], None))


def test_a_look_read_on_a_history_missing_a_layer_at_the_horizon_is_refused(v3_body, rules):
    """Three pairs whose effect is 0.5 at every layer; seed 31's encoder lost layer 2 at the
    horizon and its layer 3 reads 0.9.  Over three layers seed 31's effect would read 0.633 and
    the look a mean it never had; the look is refused, naming the run."""
    from test_training_claims import STEPS, _write_run

    for seed in (30, 31, 32):
        _write_run(v3_body, f"mixv3-bert-mini-encoder-standard-s{seed}", "encoder", "standard", seed, sym=0.5)
        _write_run(v3_body, f"mixv3-bert-mini-decoder-standard-s{seed}", "decoder", "standard", seed, sym=0.0)
    h = v3_body / "mixv3-bert-mini-encoder-standard-s31" / "history.csv"
    t = pd.read_csv(h)
    at = (t["step"] == STEPS) & (t["quantity"] == "symmetry")
    t.loc[at & (t["layer"] == 3), "value"] = 0.9
    t[~(at & (t["layer"] == 2))].to_csv(h, index=False)
    with pytest.raises(CompanionError) as err:
        _read_v3(rules)
    assert "mixv3-bert-mini-encoder-standard-s31" in _one_line(err)


@pytest.mark.parametrize("extra", ["comparator-extra-seed", "threads-differ"])
def test_a_look_pairs_seeds_across_arms_in_the_bodys_order(v3_body, rules, extra):
    """The decoder arm has a seed more (33) than the encoders, or one pair ran on four CPU
    threads where the others ran on one (one device, 'CPU'): the look reads seeds 30-32, each
    encoder minus the decoder of its own seed, and its estimate is their mean (by hand)."""
    from test_training_claims import _write_run

    enc, dec = {30: 0.50, 31: 0.52, 32: 0.55}, {30: 0.01, 31: 0.0, 32: 0.03}
    for seed in (30, 31, 32):
        device = "cpu (4 threads)" if extra == "threads-differ" and seed == 31 else "cpu (1 threads)"
        _write_run(v3_body, f"mixv3-bert-mini-encoder-standard-s{seed}", "encoder", "standard", seed, sym=enc[seed],
                   device=device)
        _write_run(v3_body, f"mixv3-bert-mini-decoder-standard-s{seed}", "decoder", "standard", seed, sym=dec[seed],
                   device=device)
    if extra == "comparator-extra-seed":
        _write_run(v3_body, "mixv3-bert-mini-decoder-standard-s33", "decoder", "standard", 33, sym=0.9)
    c = _read_v3(rules)
    assert c["seeds_in"] == [30, 31, 32] and c["reading"].estimate.n == 3
    assert c["reading"].estimate.mean == pytest.approx(np.mean([enc[s] - dec[s] for s in (30, 31, 32)]), abs=1e-6)


def test_a_pair_whose_runs_record_no_device_is_refused_not_read_as_one_device(v3_body, rules):
    """Seed 31's two runs record no device: 'an unrecorded device' twice is no evidence of one
    device, and the rules compare a pair made on one device only (a pair across devices is
    refused).  Refused, naming the seed."""
    from test_training_claims import _write_run

    for seed, e in zip((30, 31, 32), (0.5, 0.52, 0.55)):
        device = None if seed == 31 else "cpu (1 threads)"
        _write_run(v3_body, f"mixv3-bert-mini-encoder-standard-s{seed}", "encoder", "standard", seed, sym=e, device=device)
        _write_run(v3_body, f"mixv3-bert-mini-decoder-standard-s{seed}", "decoder", "standard", seed, sym=0.0,
                   device=device)
    with pytest.raises(CompanionError) as err:
        _read_v3(rules)
    assert "seed 31" in _one_line(err) and "device" in _one_line(err)


# ============================================================ (b) step grids and NaN seeds

def _curve(s, t, layer=-1):
    return 3.0 + 5.0 * (1.0 + t) ** -0.3 + 0.01 * s


def _speedup_rule(speedup=0.26):
    return {"yardstick": {"rule": "speedup-nats", "speedup": speedup,
                          "read_from": {"arm": "encoder/standard", "score": "eval_loss"}},
            "body_rule": {"steps": 10000}}


def test_a_looks_table_1_yardstick_is_read_between_the_logged_evaluations():
    """Runs evaluate every 250 steps (the registration's eval_every); 74% of 10,000 is step
    7,400, between the logged 7,250 and 7,500.  The rule's yardstick (v2's, 'linear between
    logged steps') is each seed's loss there, interpolated, minus its loss at the horizon,
    averaged over the look's seeds; it is not 'no yardstick'."""
    from companion.train.studies.registered_bodies import own_yardstick

    steps = np.arange(0, 10001, 250)
    runs = _runs((1, 2, 3), steps, _curve)
    want = np.mean([np.interp(7400, steps, _curve(s, steps)) - _curve(s, 10000) for s in (1, 2, 3)])
    assert own_yardstick(runs, _speedup_rule(), [1, 2, 3]) == pytest.approx(want, rel=1e-12)


def test_a_looks_yardstick_with_a_seed_without_a_number_is_no_yardstick():
    """Seed 2's loss at step 7,500 is NaN: its loss at 7,400 cannot be read, so the seed-mean
    over the look's seeds cannot either (the mean of seeds 1 and 3 is another look's)."""
    from companion.train.studies.registered_bodies import own_yardstick

    steps = np.arange(0, 10001, 250)
    runs = _runs((1, 2, 3), steps, lambda s, t, l: np.nan if (s, t) == (2, 7500) else _curve(s, t))
    assert np.isnan(own_yardstick(runs, _speedup_rule(), [1, 2, 3]))


def test_a_scaled_yardstick_with_a_seed_without_a_number_is_no_yardstick():
    from companion.train.studies.registered_bodies import own_yardstick

    rule = {"yardstick": {"rule": "scaled-iqr", "scale": {"score": "symmetry", "role": "encoder"},
                          "read_from": {"arm": "encoder/standard", "score": "symmetry"}},
            "body_rule": {"steps": 10000}}
    runs = _structure_body()
    runs.loc[(runs["seed"] == 3) & (runs["quantity"] == "symmetry") & (runs["layer"] == 0), "value"] = np.nan
    assert np.isnan(own_yardstick(runs, rule, [1, 2, 3]))
    assert np.isfinite(own_yardstick(_structure_body(), rule, [1, 2, 3]))


def test_the_v2_speedup_yardstick_of_runs_logging_different_steps_is_the_seed_mean():
    """Seed 1 logs every 250 steps, seed 2 every 200: the seed-mean curve at 7,400 is the mean of
    the two seeds' (interpolated) losses there, not seed 2's alone (the only one logging 7,400)."""
    from companion.train.studies.evidence import speedup_nats

    a = _runs((1,), np.arange(0, 10001, 250), _curve)
    b = _runs((2,), np.arange(0, 10001, 200), _curve)
    runs = pd.concat([a, b], ignore_index=True)
    want = np.mean([np.interp(7400, g["step"], g["value"]) - _curve(s, 10000)
                    for s, g in ((1, a), (2, b))])
    assert speedup_nats(runs, 0.26) == pytest.approx(want, rel=1e-12)


def test_ordered_pairs_refuse_a_value_that_is_not_a_number():
    """One encoder seed without a number: counting its pairs as 'not above' reads 1 of 2 pairs
    ordered where one pair is unknown."""
    from companion.train.studies.compare import ordered_pairs

    assert ordered_pairs([0.5, 0.3], [0.1, 0.4]) == (3, 4)   # by hand: 0.5>0.1, 0.5>0.4, 0.3>0.1
    with pytest.raises((CompanionError, ValueError)) as err:
        ordered_pairs([0.5, np.nan], [0.1])
    assert "nan" in _one_line(err).lower()


def _with_a_broken_layer():
    """The structure body with seed 2's layer 3 NaN at step 10,000 (a diverged layer; the run
    reader passes a NaN through for the verdict engine to name)."""
    runs = _structure_body()
    at = (runs["seed"] == 2) & (runs["step"] == 10000) & (runs["quantity"] == "symmetry") & (runs["layer"] == 3)
    runs.loc[at, "value"] = np.nan
    return runs


def test_a_final_score_or_curve_with_a_layer_without_a_number_is_no_number():
    """Seed 2's layer 3 is NaN at its last step: the mean of its other three layers (0.22) is
    not its layer-mean score (its other seeds read 0.26 and 0.28, by hand)."""
    from companion.train.studies.compare import final_scores, seed_mean_curve

    fs = final_scores(_with_a_broken_layer(), keys=("seed",))
    assert np.isnan(fs.loc[2]) and fs.loc[1] == pytest.approx(0.26) and fs.loc[3] == pytest.approx(0.28)
    curve = seed_mean_curve(_with_a_broken_layer())
    assert np.isnan(curve.loc[10000]) and curve.loc[5000] == pytest.approx(0.27)


def test_the_top_layer_of_a_run_with_a_layer_without_a_number_is_refused():
    """idxmax passes over a NaN: seed 2's top layer read 2 where layer 3 (the top of every other
    run, by hand: 0.4 + 0.01 seed) gave no number."""
    from companion.train.studies.compare import top_layers

    assert top_layers(_structure_body()).tolist() == [3, 3, 3]
    with pytest.raises(ValueError) as err:
        top_layers(_with_a_broken_layer())
    assert "b-encoder-standard-s2" in _one_line(err)


def test_the_peak_and_fall_of_a_run_with_a_layer_without_a_number_is_refused():
    """A NaN layer at the step where the trajectory would peak: the mean of the other layers
    read a lower peak at another step, and the fall with it."""
    from companion.train.studies.mechanism import peak_and_fall

    runs = _runs((1,), (0, 100, 200), lambda s, t, l: {0: 0.1, 100: 0.5, 200: 0.3}[t] + 0.01 * l,
                 quantity="symmetry", layers=(0, 1)).assign(run="update-adamw-encoder-standard-s1", size="regime")
    pf = peak_and_fall(runs).iloc[0]
    assert (pf["peak"], pf["final"], pf["peak_step"]) == pytest.approx((0.505, 0.305, 100))   # by hand
    assert pf["fall"] == pytest.approx(0.2)
    runs.loc[(runs["step"] == 100) & (runs["layer"] == 1), "value"] = np.nan
    with pytest.raises(CompanionError) as err:
        peak_and_fall(runs)
    assert "update-adamw-encoder-standard-s1" in _one_line(err) and "100" in _one_line(err)


def test_the_memorisation_curve_reads_a_window_with_a_diverged_step_as_no_number():
    """Held-out 4.0 at steps 100 and 200, training loss 3.0 at every step but step 150 (NaN):
    the gap at 100 is 1.0 (by hand); the one at 200 has no number, as the guard's own gap
    (memorisation_gap) reads it, not 1.0 over the other 49 steps."""
    from companion.train.studies.blind import memorisation_curves
    from companion.train.studies.evidence import memorisation_gap

    ev = _runs((1,), (0, 100, 200), lambda s, t, l: 4.0)
    tr = _runs((1,), range(1, 201), lambda s, t, l: np.nan if t == 150 else 3.0, quantity="train_loss")
    runs = pd.concat([ev, tr], ignore_index=True)
    gaps = memorisation_curves(runs).set_index("step")["gap"]
    assert gaps.loc[100] == pytest.approx(1.0)
    assert np.isnan(memorisation_gap(runs, "encoder").loc[1]) and np.isnan(gaps.loc[200])


# ============================================================ (c) premises

def test_a_share_at_exactly_one_half_with_no_spread_is_below_half_with_p_one():
    """Every window is [3, 5]: type 3 is always context (ratio > 1), type 5 always predicted, so
    exactly half of the occurrences have ratio > 1 in every resample.  The share is not above
    one half and not below it: both one-sided p-values are 1 (p_below 0 read 'surely below')."""
    from companion.judge.premises import context_ratio_share

    r = context_ratio_share(np.tile([[3, 5]], (120, 1)), 10, min_count=100, n_boot=100, n_bag=20)
    assert r["share"] == 0.5 and r["se"] == 0.0
    assert r["p_above_half"] == 1.0 and r["p_below_half"] == 1.0


@pytest.mark.parametrize("value", [(0.6, 0.55, 0.65, 1.5, 0.0), (0.6, 0.55, 0.65, 0.01, -0.5),
                                   (0.6, 0.55, 0.65, 0.01)],
                         ids=["p-above-1", "p-below-0", "p-pair-cut"])
def test_a_premise_share_with_p_values_that_are_not_a_pair_of_probabilities_is_refused(value, rules):
    """A p-value outside [0, 1] entered Holm as given; a share with one p-value had it dropped
    (the member then entered Holm with none)."""
    from companion.judge.empirical import premise_share_test

    with pytest.raises(CompanionError) as err:
        premise_share_test({"document-aligned": value}, rules)
    assert "document-aligned" in _one_line(err)


@pytest.mark.parametrize("fn,args", [("beta_correlation_test", ([np.nan, 0.5, 0.6],)),
                                     ("equal_spreads_test", ([0.01, np.inf, 0.02], 0.5)),
                                     ("beta_correlation_test", ([],))])
def test_premise_tests_on_seeds_without_a_number_refuse_in_one_line(fn, args, rules):
    import companion.judge.empirical as emp

    with pytest.raises(ValueError) as err:
        getattr(emp, fn)(*args, rules=rules)
    assert "finite" in _one_line(err)


def test_the_exact_rank_test_with_ties_agrees_with_enumerating_every_split():
    from scipy.stats import rankdata

    from companion.judge.empirical import _exact_rank_p

    enc, dec = [0.51, 0.51, 0.40, 0.62], [0.40, 0.33, 0.51]
    pooled = np.array(enc + dec)
    ranks = rankdata(pooled)
    obs = ranks[:len(enc)].sum()
    sums = [ranks[list(c)].sum() for c in itertools.combinations(range(len(pooled)), len(enc))]
    want = (np.mean([s >= obs - 1e-9 for s in sums]), np.mean([s <= obs + 1e-9 for s in sums]))
    assert _exact_rank_p(enc, dec) == pytest.approx(want, rel=1e-12)


def test_the_family_adjusts_by_holm_as_a_hand_computation_does():
    from companion.judge.empirical import family

    rows = pd.DataFrame([dict(claim="a", outcome="holds", p_holds=0.004, p_refuted=0.9, p_decides=0.004),
                         dict(claim="b", outcome="refuted", p_holds=0.8, p_refuted=0.01, p_decides=0.01),
                         dict(claim="c", outcome="inconclusive", p_holds=0.3, p_refuted=0.2, p_decides=np.nan)])
    t = family(rows, 0.05)
    # Holm by hand: sorted 0.004, 0.01, 0.2 -> 3 x 0.004, max(that, 2 x 0.01), max(that, 0.2)
    assert t["p_holm"].tolist() == pytest.approx([0.012, 0.02, 0.2])
    assert t["survives"].tolist() == ["yes", "yes", ""] and t["status"].tolist()[:2] == ["holds", "refuted"]


# ============================================================ (d) the blind check and the bodies

def _body_with(registered):
    return {"pattern": "mixv3-bert-mini-*", "label": "probe", "registered": registered}


@pytest.mark.parametrize("registered,word", [
    ({"file": "data/rules_history/verdict_rules_v3_renamed.yaml", "fixed": "2026-11-28T06:04:00+00:00"},
     "verdict_rules_v3_renamed.yaml"),
    ({"file": "data/rules_history/verdict_rules_v3.yaml", "fixed": "2026-11-27T06:04:00+00:00"},
     "2026-11-27T06:04:00"),
], ids=["renamed-file", "amended-stamp"])
def test_a_registration_the_rules_history_does_not_hold_is_refused_not_read_as_uncommitted(registered, word):
    """The blind check anchors a body at the first commit of its registration's file holding its
    stamp.  A file renamed away, or a stamp amended (moved earlier) in the rules in force, has no
    such commit: read as 'outside a git checkout', the anchor fell back to the stamp alone, and
    runs made before the rules were committed read as blind."""
    from companion.train.studies.registered_bodies import _rules_commit

    with pytest.raises(CompanionError) as err:
        _rules_commit(_body_with(registered))
    assert word in _one_line(err)


def test_the_registration_in_the_rules_history_is_anchored_at_or_after_its_stamp():
    from companion.rules.verdicts import _as_datetime
    from companion.train.studies.registered_bodies import _rules_commit

    stamp = "2026-11-28T06:04:00+00:00"
    got = _rules_commit(_body_with({"file": "data/rules_history/verdict_rules_v3.yaml", "fixed": stamp}))
    assert got is None or got >= _as_datetime(stamp)


@pytest.mark.parametrize("field,value", [("max_grad_norm", 0.5), ("grad_accum", 2), ("smoothing", 3),
                                         ("extra", {"lr_scale": 2.0})])
def test_runs_of_one_body_differing_in_a_field_that_changes_learning_are_refused(field, value):
    from companion.train.studies.registration import same_learning_config
    from test_training_claims import REGISTERED

    provs = {f"r{s}": {"started": "2099-01-01T00:00:00+00:00",
                       "config": {**REGISTERED, "mode": "encoder", "init": "standard", "seed": s}} for s in range(3)}
    provs["r1"]["config"][field] = value
    with pytest.raises(CompanionError) as err:
        same_learning_config(provs, "probe")
    msg = _one_line(err)
    assert "r1" in msg and field in msg, msg


# ============================================================ (e) verdict records read back

_ROW = dict(key="prop_2_1", claim="c", status="holds", measured="m", size="s", chapter="errata", label="l")


@pytest.mark.parametrize("edit", [{"rule_after": "False"}, {"withheld": float("nan")}, {"measured": 0.3},
                                  {"rule_after": 1.0}], ids=["rule-after-text", "withheld-nan", "measured-number",
                                                             "rule-after-float"])
def test_a_verdict_record_with_a_field_of_another_kind_is_refused(edit):
    """Read back from a table, rule_after 'False' is a true string (a page then says the rule
    was written after the evidence) and a NaN prints 'nan' on a page."""
    from companion.judge.verdict_record import Verdict

    with pytest.raises(CompanionError) as err:
        Verdict(**{**_ROW, **edit})
    assert next(iter(edit)) in _one_line(err)


def test_a_verdict_record_whose_flag_is_a_numpy_bool_reads_back_as_that_flag():
    """A table hands its flags back as numpy booleans: accepted, read as the flag they hold."""
    from companion.judge.verdict_record import Verdict

    assert Verdict(**_ROW, rule_after=np.bool_(True)).rule_after == True   # noqa: E712
    assert not Verdict(**_ROW, rule_after=np.bool_(False)).rule_after


@pytest.mark.parametrize("table,word", [
    (lambda row: pd.DataFrame([row, {**row, "status": "refuted"}]), "more than once"),
    (lambda row: pd.DataFrame([{k: v for k, v in row.items() if k != "measured"}]), "measured"),
    (lambda row: pd.DataFrame([{**row, "key": "prop_2_2"}]), "prop_2_1"),
], ids=["key-twice", "column-missing", "key-absent"])
def test_a_verdict_table_read_back_with_edited_rows_is_refused_in_one_line(monkeypatch, table, word):
    from companion.judge import claims
    from companion.judge.cache import store
    from companion.judge.verdict_record import Verdict

    row = Verdict(**_ROW).as_dict()
    monkeypatch.setitem(store(), "all_verdicts", table(row))
    with pytest.raises(CompanionError) as err:
        claims.verdict("prop_2_1")
    assert word in _one_line(err)


# ============================================================ (f) duplicated and unsorted steps

def test_arm_values_read_the_same_from_rows_in_any_order():
    from companion.train.studies.evidence import arm_values

    runs = _structure_body()
    shuffled = runs.sample(frac=1.0, random_state=3).reset_index(drop=True)
    pd.testing.assert_series_equal(arm_values(shuffled, "symmetry", "encoder"), arm_values(runs, "symmetry", "encoder"))


@pytest.mark.parametrize("seqs,word", [(np.array([[-1, 0, 0, 2]]), "-1"), (np.zeros((0, 4), dtype=np.int64), "empty"),
                                       (np.array([[0.5, 1.0]]), "float")], ids=["negative-id", "empty", "float-ids"])
def test_restricting_the_vocabulary_of_ids_it_cannot_remap_is_refused(seqs, word):
    """A negative id indexed the remap table from its end: in [-1, 0, 0, 2] the id -1 took the
    table's last cell, so -1 and 2 both read as token 1, silently ([[1, 0, 0, 1]])."""
    from companion.judge.stdlib_corpus import restrict_vocabulary

    assert restrict_vocabulary(np.array([[5, 5, 7, 9, 5, 7]]), 2).tolist() == [[0, 0, 1, 2, 0, 1]]   # by hand
    with pytest.raises((CompanionError, ValueError)) as err:
        restrict_vocabulary(seqs, 2)
    assert word in _one_line(err).lower()


@pytest.mark.parametrize("seqs,word", [([[0.5, 1.7, 2.0]], "float"), ([[3, -1, 2]], "-1")],
                         ids=["float-ids", "negative-id"])
def test_premise_runs_refuse_token_ids_they_would_read_as_others(seqs, word):
    """Float ids were cast to whole ones (0.5 read as token 0, 1.7 as token 1), silently; a
    negative id reached the embedding's lookup."""
    from companion.judge.premises import train_and_measure, update_anatomy

    for call in (lambda: update_anatomy(seqs, "bidirectional", d=4, n_batches=1, batch_size=2),
                 lambda: train_and_measure(seqs, "bidirectional", 0, [0], d=4, n_layers=1, batch_size=2)):
        with pytest.raises((CompanionError, ValueError)) as err:
            call()
        assert word in _one_line(err).lower()


@pytest.mark.parametrize("n,confidence", [(1, 0.8), (3, 1.5), (3, 0.0)])
def test_a_planning_spread_from_one_seed_or_an_impossible_confidence_is_refused(n, confidence):
    """sqrt((n - 1) / chi2) of one seed or at a confidence outside (0, 1) is NaN: the design
    check then planned on a spread that is not a number."""
    from scipy import stats

    from companion.train.studies.design_check import planning_sd

    want = 0.02 * np.sqrt(2 / stats.chi2.ppf(0.2, 2))   # n = 3 at 80%, by the closed form
    assert planning_sd(0.02, 3, 0.8) == pytest.approx(want, rel=1e-12) and want > 0.02
    with pytest.raises((CompanionError, ValueError)) as err:
        planning_sd(0.02, n, confidence)
    assert ("seed" in _one_line(err)) or ("confidence" in _one_line(err))

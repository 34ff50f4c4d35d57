"""Sentences and tables built from training-study results, fed result tables whose right
wording is worked out by hand: a median of an even number of seeds one of which never
reached, a coverage or a speed-up just short of a round number, a seed listed twice, a
peak that is negative or late, a share just below its mark, a floor near ln 2, a body of one
seed, two runs of one seed, and counts of one."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

_NAN = float("nan")


def s():
    import companion.judge.sentences as sentences

    return sentences


# ------------------------------------------------------------------- the censored median speed-up
def test_a_median_of_two_seeds_one_never_reaching_is_bounded_by_half_the_other_not_said_below_0():
    from companion.train.studies.speedup import censored_median_speedup

    # the median of two seeds is the midpoint of x < 0 (never reached) and 0.20: below 0.10, not below 0
    res = censored_median_speedup([_NAN, 0.2])
    assert res["text"].startswith("below 0.10 (interval below 0 to 0.20, 50% coverage; 1 of 2 seeds reached)")
    assert not res["median"] == -np.inf   # the midpoint is no number below 0
    res4 = censored_median_speedup([_NAN, _NAN, 0.3, 0.4])   # middles: never reached and 0.30
    assert res4["text"].startswith("below 0.15 (")


def test_the_summary_median_of_two_pairs_one_never_reaching_is_no_number_below_0():
    from companion.train.studies.speedup import speedup_over_seeds

    def h(losses):
        return pd.DataFrame({"step": [10, 20, 30], "quantity": "eval_loss", "value": losses})

    base = h([5.0, 4.0, 3.0])
    # seed 0 reaches 3.0 (smoothed over one point) at step 20 of 30: 1/3 saved; seed 1 never does
    pairs = {0: (base, h([4.0, 3.0, 2.9])), 1: (base, h([5.5, 4.5, 3.5]))}
    table, summary = speedup_over_seeds(pairs, window=1)
    assert table["speedup"].iloc[0] == pytest.approx(1 / 3) and math.isnan(table["speedup"].iloc[1])
    # the midpoint of 1/3 and a speed-up below 0 lies below 1/6: 'below 0' (-inf) is more than the seeds show
    assert math.isnan(summary["median"]) and summary["min"] == -np.inf and summary["n_reached"] == 1


@pytest.mark.parametrize("values", [[_NAN, 0.0], [_NAN, _NAN, 0.3], [_NAN, _NAN, _NAN, 0.4]])
def test_a_median_whose_middle_seeds_never_reached_or_reached_at_0_is_below_0(values):
    from companion.train.studies.speedup import censored_median_speedup

    # [nan, 0]: midpoint of x < 0 and 0 is < 0; odd count: the middle seed never reached
    res = censored_median_speedup(values)
    assert res["text"].startswith("below 0 (") and res["median"] == -np.inf


def test_one_seed_that_reached_is_one_seed_in_the_speedup_text():
    from companion.train.studies.speedup import censored_median_speedup

    assert censored_median_speedup([0.3])["text"] == "0.30 (one seed, no interval; 1 of 1 seed reached)"
    assert censored_median_speedup([_NAN])["text"] == "below 0 (one seed, no interval; 0 of 1 seed reached)"


def test_a_coverage_short_of_certainty_is_not_printed_as_100_percent():
    from companion.train.studies.speedup import censored_median_speedup

    # nine seeds at level 0.99: k = 2 covers 1 - 2 (1 + 9) / 512 = 0.961 < 0.99, so min to max,
    # which covers 1 - 2 / 512 = 0.99609...
    cover = 1 - 2 * stats.binom.cdf(0, 9, 0.5)
    assert cover == pytest.approx(0.99609375)
    text = censored_median_speedup(np.linspace(0.1, 0.5, 9), level=0.99)["text"]
    assert "100%" not in text and "99.6% coverage" in text
    # a coverage with no digit lost keeps its form
    assert "75% coverage" in censored_median_speedup([0.1, 0.2, 0.3])["text"]


def test_a_speedup_short_of_1_or_above_0_is_not_printed_as_1_00_or_0_00():
    from companion.train.studies.speedup import censored_median_speedup

    # t* = 4 of T = 1000 saves 0.996 of training, not all of it; t* = 996 saves 0.004, not nothing
    text = censored_median_speedup([0.996])["text"]
    assert text.startswith("0.996 (") and "1.00" not in text
    text = censored_median_speedup([0.004, 0.004, 0.004])["text"]
    assert text.startswith("0.004 (interval 0.004 to 0.004") and "0.00 " not in text
    # a speed-up of exactly 1 (target reached at step 0) and of exactly 0 stay as they are
    assert censored_median_speedup([1.0])["text"].startswith("1.00 (")
    assert censored_median_speedup([0.0])["text"].startswith("0.00 (")


# ------------------------------------------------------------- the paired loss difference per step
def _diff(rows):
    return pd.DataFrame(rows, columns=["seed", "step", "baseline", "candidate", "difference"])


def test_a_seed_listed_twice_at_a_step_is_refused_not_counted_as_two_seeds():
    from companion.train.studies.speedup import paired_difference_interval

    diff = _diff([(0, 100, 5.0, 4.9, -0.1), (1, 100, 5.0, 4.8, -0.2), (1, 100, 5.0, 4.8, -0.2)])
    with pytest.raises(ValueError, match=r"seed 1 .*step 100"):
        paired_difference_interval(diff)


def test_a_nan_in_one_seed_makes_the_steps_mean_missing_not_the_mean_of_the_others():
    from companion.train.studies.speedup import paired_difference_interval

    diff = _diff([(0, 100, 5.0, 4.9, -0.1), (1, 100, 5.0, _NAN, _NAN), (2, 100, 5.0, 4.7, -0.3)])
    row = paired_difference_interval(diff).iloc[0]
    assert row["n_seeds"] == 3 and math.isnan(row["mean"]) and math.isnan(row["low"])


def test_two_seeds_of_equal_difference_give_a_zero_width_interval_and_others_scipys():
    from companion.train.studies.speedup import paired_difference_interval

    row = paired_difference_interval(_diff([(0, 50, 5.0, 4.9, -0.1), (1, 50, 5.0, 4.9, -0.1)])).iloc[0]
    assert row["mean"] == pytest.approx(-0.1) and row["low"] == pytest.approx(-0.1) and row["high"] == pytest.approx(-0.1)
    d = np.array([-0.1, 0.05, -0.2])
    row = paired_difference_interval(_diff([(i, 50, 5.0, 5.0 + v, v) for i, v in enumerate(d)])).iloc[0]
    lo, hi = stats.t.interval(0.95, 2, loc=d.mean(), scale=stats.sem(d))
    assert row["low"] == pytest.approx(lo) and row["high"] == pytest.approx(hi)


# ------------------------------------------------------------------------- the blind matrix's progress
def test_claims_short_of_seeds_alone_are_named_as_training_claims():
    from companion.judge.claims import blind_progress_text

    text = blind_progress_text(5, 0, 1)
    assert text.startswith("1 of the 5 training claims has fewer than the three seeds its verdict needs")
    assert blind_progress_text(5, 0, 2).startswith("2 of the 5 training claims have fewer than the three seeds "
                                                   "their verdict needs")


# ------------------------------------------------------------------------- the encoders' symmetry peak
def test_a_negative_symmetry_that_ends_at_its_peak_is_not_said_to_have_fallen():
    text = s().symmetry_peak(100, -0.1, 1000, -0.1)
    assert "fallen" not in text and "undid" not in text
    assert "highest at step 100 (-0.100) and ends at -0.100 (step 1000)" in text


def test_a_peak_after_the_last_step_is_refused():
    with pytest.raises(ValueError, match="step 2000.*after.*1000"):
        s().symmetry_peak(2000, 0.2, 1000, 0.05)


def test_a_peak_in_the_later_half_is_not_called_early():
    text = s().symmetry_peak(900, 0.2, 1000, 0.05)
    assert "early" not in text and "at step 900 (0.200)" in text and "fallen to 0.050 by step 1000" in text
    # a peak in the first half is early, as before
    assert "peaks early, at step 200 (0.200)" in s().symmetry_peak(200, 0.2, 1000, 0.05)


# ----------------------------------------------------------------------------- rank-one updates
def test_a_rank_one_share_just_below_the_mark_is_not_printed_on_it():
    # 0.7996 is not close to rank one at near = 0.8: printed '0.80' it reads as the 0.8004 beside it
    text = s().rank_one_updates(0.7996, 0.8004)
    assert "The masked update is close to rank one" in text
    assert "less so (0.7996)" in text and "(0.8004 of its squared norm" in text
    # shares away from the mark keep their committed digits
    assert s().rank_one_updates(0.95, 0.42) == ("The autoregressive update is close to rank one (0.950 of its squared "
                                                "norm in the top singular value), the masked one less so (0.42)")


# -------------------------------------------------------------------------------- the gate's floor
@pytest.mark.parametrize("floor,want", [(0.6935, "0.6935"), (0.6925, "0.6925"), (0.69, "0.690")])
def test_a_gate_floor_that_is_not_ln_2_is_never_written_as_it(floor, want):
    text = s().gate_floor(floor)
    assert text == want and "ln 2 = 0.694" not in text


def test_a_gate_floor_of_ln_2_reads_ln_2():
    assert s().gate_floor(math.log(2)) == "ln 2 = 0.693"
    assert s().gate_floor(0.6931) == "ln 2 = 0.693"


# ------------------------------------------------------------------ the body at the paper's rate
def _paper_rate(monkeypatch, **row):
    import companion.judge.claim_sentences as cs

    base = {"body_key": "wikipedia-regime-paper-lr", "comparator": "decoder", "n": 3, "estimate": -0.2,
            "low": -0.3, "high": -0.1, "outcome": "refuted", "gate_reason": "", "gate": True}
    base.update(row)
    monkeypatch.setattr(cs, "training_tests_table", lambda key: pd.DataFrame([base]))
    return cs.paper_rate_text()


def test_the_paper_rate_body_with_one_seed_is_not_said_to_have_no_reversed_contrast(monkeypatch):
    text = _paper_rate(monkeypatch, n=1, low=_NAN, high=_NAN, outcome="not testable here")
    assert "no training contrast comes out reversed" not in text
    assert "not read" in text and "one seed" in text


def test_the_paper_rate_body_with_a_missing_bound_is_not_said_to_have_no_reversed_contrast(monkeypatch):
    text = _paper_rate(monkeypatch, low=_NAN, high=-0.1)
    assert "no training contrast comes out reversed" not in text and "reversed (" not in text
    assert "not read" in text
    # with its interval the reversal is read, as before
    assert "is reversed" in _paper_rate(monkeypatch)


# --------------------------------------------------------------------------------- the objective swap
def _swap_rows(runs):
    rows = []
    for run, role, seed, v in runs:
        for layer in range(2):
            rows.append(dict(run=run, role=role, seed=seed, step=10, quantity="symmetry", head=-1, layer=layer,
                             value=v))
    return pd.DataFrame(rows)


def test_two_swap_runs_of_one_seed_and_role_are_refused_not_averaged():
    from companion.base.errors import CompanionError
    from companion.train.studies.swap import end_values

    runs = _swap_rows([("swap-minilm-swap-s1", "swap", 1, 0.1), ("swap-minilm-swap-s01", "swap", 1, 0.3),
                       ("swap-minilm-control-s1", "control", 1, 0.2)])
    with pytest.raises(CompanionError, match="swap-minilm-swap-s01"):
        end_values(runs, "symmetry")
    # one run per seed and role: its own value
    ok = end_values(runs[runs["run"] != "swap-minilm-swap-s01"], "symmetry")
    assert ok.loc[1, "swap"] == pytest.approx(0.1) and ok.loc[1, "control"] == pytest.approx(0.2)


# ------------------------------------------------------------------------------- the compute study
def _hist(sym, direction):
    rows = []
    for i, v in enumerate(sym):
        step = (i + 1) * 10
        rows.append(dict(step=step, quantity="eval_loss", head=-1, layer=-1, value=5.0 - 0.1 * i))
        for layer in range(2):
            rows.append(dict(step=step, quantity="symmetry", head=-1, layer=layer, value=v))
            rows.append(dict(step=step, quantity="directionality", head=-1, layer=layer, value=direction))
    return pd.DataFrame(rows)


def _meta(mode):
    return {"config": {"mode": mode, "batch_size": 2, "lr": 1e-3, "seq_len": 4},
            "model_size": {"num_hidden_layers": 2, "hidden_size": 8, "num_attention_heads": 2, "seq_len": 4},
            "cpu_seconds": 10.0}


def test_the_share_of_a_peak_that_is_not_above_0_is_missing_not_300_percent():
    from companion.train.studies.compute_study import study_table

    dec = (_hist([0.0, 0.0, 0.0], -0.2), _meta("decoder"))
    table = study_table({("base", "encoder"): (_hist([-0.01, -0.02, -0.03], 0.1), _meta("encoder")),
                         ("base", "decoder"): dec,
                         ("width64", "encoder"): (_hist([0.1, 0.4, 0.2], 0.1), _meta("encoder")),
                         ("width64", "decoder"): dec}, n_samples=200)
    # a peak of -0.01 ending at -0.03 kept no 300% of it; a peak of 0.4 ending at 0.2 kept half
    assert math.isnan(table.loc["base", "enc_sym_kept"])
    assert table.loc["width64", "enc_sym_kept"] == pytest.approx(0.5)


def test_a_layer_without_a_number_is_refused_not_left_out_of_the_layer_mean():
    from companion.train.studies.compute_study import layer_mean_curve, study_table

    h = pd.DataFrame([dict(step=st, quantity="symmetry", head=-1, layer=la, value=v)
                      for st in (10, 20) for la, v in ((0, 0.1), (1, 0.5))])
    assert layer_mean_curve(h).tolist() == pytest.approx([0.3, 0.3])
    h.loc[(h["step"] == 20) & (h["layer"] == 1), "value"] = _NAN   # the mean of layer 0 alone would read 0.1
    with pytest.raises(ValueError, match="layer 1's symmetry at step 20"):
        layer_mean_curve(h)
    enc = _hist([0.1, 0.2, 0.3], 0.1)
    enc.loc[(enc["quantity"] == "symmetry") & (enc["layer"] == 1) & (enc["step"] == 30), "value"] = _NAN
    with pytest.raises(ValueError, match="study variant 'base'.*layer 1's symmetry at step 30"):
        study_table({("base", "encoder"): (enc, _meta("encoder")),
                     ("base", "decoder"): (_hist([0.0, 0.0, 0.0], -0.2), _meta("decoder"))}, n_samples=200)


# ------------------------------------------------------------------------ the rule's paired tests
def test_a_paired_test_with_two_rows_for_its_body_is_refused_not_the_first_read():
    table = pd.DataFrame({"body_key": ["b", "b"], "comparator": ["decoder", "decoder"], "n": [3, 3],
                          "estimate": [0.1, -0.1], "low": [0.05, -0.2], "high": [0.15, -0.05],
                          "seeds": ["1, 2, 3", "1, 2, 3"], "outcome": ["holds", "refuted"]})
    with pytest.raises(ValueError, match="2 rows.*'b'.*decoder"):
        s().paired_test(table, "b", bodies={"b": {}})
    # columns in another order, one row: read by name
    one = table.iloc[[1]][["outcome", "seeds", "high", "low", "estimate", "n", "comparator", "body_key"]]
    assert s().paired_test(one, "b", bodies={"b": {}}) == ("-0.100 (95% t-interval -0.200 to -0.050, seeds 1, 2, 3), "
                                                           "refuted")


def test_a_paired_result_of_exactly_zero_reads_zero_with_its_interval_straddling_0():
    assert s().paired_result(-0.0, -0.1, 0.1, 3, "inconclusive") == "+0.000 [-0.100, +0.100]: inconclusive"
    assert s().lower_or_higher(-0.1, 0.1) == "not distinguishable"


def test_minutes_over_a_day_and_under_one_are_worded_as_they_are():
    assert s().minutes_by_mode({"encoder": 1500.4, "decoder": 0.4}) == "1500 minutes (encoder) and 0.4 minutes (decoder)"


# ---------------------------------------------------------------------------- the mechanism's causes
def test_a_cause_whose_removal_raises_the_fall_is_not_said_to_drive_it():
    from companion.train.studies.mechanism import cause_table

    rows = []
    # adamw falls 0.2, 0.3, 0.25 from its peak; sgd (Adam's normalisation removed) falls more
    for group, falls in (("adamw", (0.2, 0.3, 0.25)), ("sgd", (0.4, 0.45, 0.5))):
        for seed, fall in enumerate(falls):
            for step, v in ((0, 0.0), (10, 0.6), (20, 0.6 - fall)):
                for layer in range(2):
                    rows.append(dict(run=f"update-{group}-encoder-s{seed}", mode="encoder", seed=seed, size="cpu",
                                     quantity="symmetry", head=-1, layer=layer, step=step, value=v))
    t = cause_table(pd.DataFrame(rows)).set_index("variant")
    d = np.array([0.4, 0.45, 0.5]) - np.array([0.2, 0.3, 0.25])
    lo, hi = stats.t.interval(0.95, 2, loc=d.mean(), scale=stats.sem(d))
    assert t.loc["sgd", "difference"] == pytest.approx(d.mean())
    assert t.loc["sgd", "low"] == pytest.approx(lo) and t.loc["sgd", "high"] == pytest.approx(hi)
    assert not t.loc["sgd", "drives_fall"] and t.loc["sgd", "share_removed"] == pytest.approx(-d.mean() / 0.25)

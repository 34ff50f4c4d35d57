"""The helpers behind the verdicts of the chapter "What survives", against closed forms."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from companion.judge import claims, stdlib_corpus as prose
from companion.base.errors import CompanionError
from companion.judge.premises import log_variance_ratio_null, train_and_measure, update_anatomy


def test_a_verdict_refuses_an_unknown_status():
    with pytest.raises(CompanionError, match="status must be one of"):
        claims.Verdict("k", "claim", "mostly true", "", "", "errata", "")


def test_an_unknown_claim_is_named_with_the_choices():
    with pytest.raises(CompanionError, match="unknown claim 'thm_9'.*prop_2_1"):
        claims.verdict("thm_9")


def test_plain_strings_have_no_quotes_in_their_repr():
    assert repr(claims.Plain("holds")) == "holds"


def test_conv_hull_membership_of_the_attention_part_and_not_of_the_output():
    hull = claims.conv_hull_check(N=5, d=8, seed=3)
    assert all(hull["attention_in_conv_values"]) and not any(hull["output_in_conv_X"])
    assert hull["weights_min"] > 0 and hull["row_sums_max_dev"] < 1e-12


def test_s50_as_printed_is_the_transpose_of_the_regrouped_sum():
    chk = claims.s50_transpose_check(seed=5)
    assert chk["printed_transposed"] < 1e-12 < 0.1 < chk["printed"]


def test_context_token_drawn_like_the_others_gives_equal_row_and_column_profiles():
    Sigma = np.diag([4.0, 1.0, 0.25])
    out = claims.s1_8_same_law_profiles(Sigma, np.array([1.0, -0.5, 0.3]), n_samples=60_000, seed=1)
    expected = np.diag(Sigma) * np.trace(Sigma) * (1 + 0.25 + 0.09)
    assert np.allclose(out["closed"], expected)
    assert out["max_rel_vs_closed"] < 0.05 and out["max_rel_col_vs_row"] < 0.05


def test_log_variance_ratio_of_exchangeable_matrices_is_centred_and_symmetric():
    null = log_variance_ratio_null(16, n_samples=4000, seed=2)
    assert abs(np.median(null)) < 0.05
    lo, hi = np.quantile(null, [0.025, 0.975])
    assert abs(lo + hi) < 0.15


def test_masked_update_at_init_is_the_mask_embedding_times_one_vector():
    seqs = prose.restrict_vocabulary(prose.packed_sequences(32), 63)
    a = update_anatomy(seqs, "bidirectional", d=16, n_batches=2)
    assert a["cos_left_mask"] > 0.95 and a["top_singular_share"] > 0.95
    # symmetry of a rank-one matrix u v^T is cos^2(u, v)
    assert abs(a["symmetry"] - a["cos_left_right"] ** 2) < 1 - a["top_singular_share"] + 0.02


def test_training_measurements_have_one_row_per_checkpoint_and_layer():
    seqs = prose.restrict_vocabulary(prose.packed_sequences(16), 63)
    h = train_and_measure(seqs, "autoregressive", steps=4, checkpoints=[0, 4], d=8, n_layers=2)
    assert list(h["step"]) == [0, 0, 4, 4] and list(h["layer"]) == [0, 1, 0, 1]
    assert (h["one_zero"] == 1.0).all()      # causal mask: beta_ij and beta_ji never both non-zero
    with pytest.raises(CompanionError, match="checkpoints must lie"):
        train_and_measure(seqs, "autoregressive", steps=4, checkpoints=[5])
    with pytest.raises(CompanionError, match="objective must be"):
        train_and_measure(seqs, "sideways", steps=4, checkpoints=[0])


def _fake_body(gaps, quantity="symmetry", comparator="decoder", half_gaps=None, loss=4.0, train_loss=None):
    """A stand-in for a body of cached runs: per seed, an encoder and a comparator whose
    layer-mean ``quantity`` differ by ``half_gaps[seed]`` at step 1,000 and ``gaps[seed]``
    at step 2,000, with held-out losses ``loss`` and a training loss ``train_loss`` (default:
    the held-out loss) over the last evaluation interval."""
    half_gaps = gaps if half_gaps is None else half_gaps
    train_loss = loss if train_loss is None else train_loss
    rows = []
    for seed, (gap, half) in enumerate(zip(gaps, half_gaps)):
        for mode, enc in (("encoder", True), (comparator, False)):
            run = f"fake-{mode}-standard-s{seed}"
            for step, g in ((1000, half), (2000, gap)):
                value = 0.1 + (g if enc else 0.0)
                for layer in range(4):
                    rows.append((run, mode, "standard", seed, step, quantity, layer, -1, value + 0.01 * layer))
                rows.append((run, mode, "standard", seed, step, "eval_loss", -1, -1, loss))
            rows.append((run, mode, "standard", seed, 1500, "train_loss", -1, -1, train_loss))
    return pd.DataFrame(rows, columns=["run", "mode", "init", "seed", "step", "quantity", "layer", "head", "value"]
                        ).assign(penalty="none", lr=1e-3)


@pytest.mark.parametrize("gaps, body_kw, expected, reason", [
    ([0.2, 0.21, 0.205], {}, "holds", ""),
    ([0.06, 0.07, 0.065], {}, "holds, size open", ""),
    ([0.02, 0.021, 0.022], {}, "negligible", ""),
    ([-0.05, -0.06, -0.055], {}, "refuted", ""),
    ([0.1, -0.08, 0.01], {}, "inconclusive", ""),
    ([0.2, 0.21, 0.205], {"loss": 4.6}, "not testable here", "not trained enough"),
    ([0.2, 0.21, 0.205], {"train_loss": 3.8}, "not testable here", "trained into memorisation"),
    ([0.2, 0.21, 0.205], {"half_gaps": [-0.1, -0.1, -0.1]}, "not testable here", "not stable between horizons"),
    ([0.2, 0.21], {}, "not testable here", ""),
])
def test_the_primary_body_decides_fig_3a_by_rules_v2(monkeypatch, gaps, body_kw, expected, reason):
    """The verdict of Fig. 3a follows the paired test of its primary body under rules v2:
    each outcome, and each part of the gate, is reached by some runs (unigram reference 5.0
    nats; the context floor is ln 2, so a held-out loss of 4.6 is not trained enough)."""
    from companion.judge import empirical
    from companion.train.studies import evidence

    fake = _fake_body(gaps, **body_kw)
    monkeypatch.setattr(claims, "_CACHE", {})
    monkeypatch.setattr(empirical, "_CACHE", {})
    monkeypatch.setattr(empirical, "_body",
                        lambda name, rules: fake if name == "wikipedia-bert-mini-blind" else None)
    monkeypatch.setattr(evidence, "null_band", lambda runs, q: 0.01)
    monkeypatch.setattr(evidence, "_shape", lambda run: {"corpus": "x", "seq_len": 8, "top_k": None,
                                                          "width": 8, "layers": 4, "init_from": None})
    monkeypatch.setattr(evidence, "_unigram_reference", lambda *a: 5.0)
    monkeypatch.setattr(evidence, "run_starts", lambda runs: {r: "2026-12-01T00:00:00Z" for r in runs["run"]})
    monkeypatch.setattr(evidence, "run_device", lambda run: "CPU")   # the fake runs have no provenance
    monkeypatch.setattr(evidence, "run_settings", lambda run: {"device": "CPU", "threads": 1, "bf16": True})
    t = claims.training_tests_table("training_symmetry")
    assert list(t["body"]) == ["Wikipedia, BERT-Mini, 10,000 steps (blind)"] and t["primary"].all()
    assert t["estimate"].iloc[0] == pytest.approx(np.mean(gaps))
    assert t["sesoi"].iloc[0] == pytest.approx(0.055)      # the published interquartile width
    assert t["outcome"].iloc[0] == expected and t["gate_reason"].iloc[0] == reason
    v = claims.training_symmetry()
    assert v.status == expected, v.measured
    assert v.kind == "empirical" and not v.rule_after      # the fake runs postdate the rule
    assert (reason in v.measured) if reason else True
    # where it was tested: the fake runs the test read, all on one CPU
    seeds = sorted(int(x) for x in fake["seed"].unique())
    assert v.size.startswith(f"Wikipedia, BERT-Mini, 10,000 steps (blind): seed{'s' if len(seeds) > 1 else ''} "
                             f"{', '.join(map(str, seeds))} on a CPU;"), v.size


def test_every_verdict_says_how_it_was_decided():
    for key, check in claims.MATH_CHECKS.items():
        assert key in {f.__name__ for f in claims.VERDICTS} and check
    v = claims.Verdict("prop_2_1", "c", "holds", "", "", "errata", "")
    assert v.check == claims.MATH_CHECKS["prop_2_1"] and v.kind == "mathematical"
    with pytest.raises(CompanionError, match="kind must be"):
        claims.Verdict("k", "c", "holds", "", "", "errata", "", kind="vibes")


def test_the_sentence_helpers_join_and_phrase_every_status():
    assert claims.joined([]) == "none" and claims.joined(["a"]) == "a"
    assert claims.joined(["a", "b", "c"]) == "a, b and c"
    assert set(claims.PHRASES) == set(claims.STATUSES)


@pytest.mark.parametrize("gap, spread, expected", [(0.2, 0.001, "holds"), (-0.2, 0.001, "refuted"),
                                                    (0.03, 0.001, "negligible"), (0.2, 0.0, "not testable here")])
def test_the_update_rule_pairs_encoder_and_decoder_updates_by_seed(monkeypatch, gap, spread, expected):
    """Encoder minus decoder per seed; seeds that agree exactly (no spread: duplicated runs) are
    no evidence of a size and read 'not testable here', as on every path."""
    from companion.judge import empirical
    from companion.train.studies import evidence
    from companion.train.runner import runs as runs_module

    rows = []
    for seed in (1, 2, 3):
        for mode, base, per_seed in (("encoder", 0.1 + gap, 0.001 + spread), ("decoder", 0.1, 0.001)):
            run = f"update-sgd-x-wikipedia-{mode}-standard-s{seed}"
            for step in (1, 11, 1000):
                for layer in (0, 1):
                    v = base + per_seed * seed if step < 100 else 5.0    # late steps outside the window
                    rows.append((run, mode, "standard", seed, step, "update_symmetry", layer, -1, v))
    fake = pd.DataFrame(rows, columns=["run", "mode", "init", "seed", "step", "quantity", "layer", "head", "value"])
    monkeypatch.setattr(runs_module, "load_runs", lambda names=None, root=None, pattern="*": fake)
    monkeypatch.setattr(evidence, "null_band", lambda runs, q: 0.05)
    t = empirical.update_tests()
    prim = t[t["primary"]].iloc[0]
    assert prim["n"] == 3 and prim["estimate"] == pytest.approx(gap + 2 * spread) and prim["outcome"] == expected


def test_the_family_withdraws_a_decided_outcome_that_does_not_survive_holm():
    from companion.judge.empirical import family

    rows = pd.DataFrame({"claim": ["a", "b", "c", "d"],
                         "outcome": ["holds", "holds, size open", "inconclusive", "refuted"],
                         "p_holds": [0.001, 0.02, 0.3, 0.9], "p_refuted": [0.9, 0.9, 0.2, 0.004],
                         "p_decides": [0.001, 0.02, np.nan, 0.004]})
    fam = family(rows, fwer=0.05).set_index("claim")
    # Holm by hand: sorted p = 0.001 (a), 0.004 (d), 0.02 (b), 0.2 (c, undecided: its smaller p)
    assert fam.loc["a", "p_holm"] == pytest.approx(0.004) and fam.loc["d", "p_holm"] == pytest.approx(0.012)
    assert fam.loc["b", "p_holm"] == pytest.approx(0.04) and fam.loc["c", "p_holm"] == pytest.approx(0.2)
    assert list(fam["survives"]) == ["yes", "no", "", "yes"]
    assert fam.loc["b", "status"] == "inconclusive (after Holm)" and fam.loc["a", "status"] == "holds"
    assert (fam["family_size"] == 4).all()
    assert "b (holds, size open, adjusted p = 0.04) does not, and reads 'inconclusive (after Holm)'" in claims.holm_sentence(fam.reset_index())
    assert claims.blind_progress_text(4, 4, 0).startswith("None of the 4")
    assert claims.blind_progress_text(4, 1, 3) == ("1 of the 4 training claims have no pair of blind runs made yet and 3 have "
                                                   "fewer than the three seeds their verdict needs (the runs go on, in the "
                                                   "plan's order; data/runs/blind_plan.md).")


def test_all_verdicts_carries_the_family_into_the_status(monkeypatch):
    def fake(key, status):
        def fn():
            return claims.Verdict(key, f"claim {key}", status, "measured", "size", "errata", "", kind="empirical")
        fn.__name__ = key
        return fn

    monkeypatch.setattr(claims, "_CACHE", {})
    monkeypatch.setattr(claims, "VERDICTS", (fake("a", "holds"), fake("b", "negligible")))
    monkeypatch.setattr(claims, "empirical_family", lambda: pd.DataFrame(
        {"key": ["a", "b"], "p_holm": [0.3, 0.001], "survives": ["no", "yes"], "family_size": [2, 2]}))
    v = claims.all_verdicts().set_index("key")
    assert v.loc["a", "status"] == "inconclusive (after Holm)" and "not significant after Holm" in v.loc["a", "holm"]
    assert "read 'holds' before" in v.loc["a", "measured"]
    assert v.loc["b", "status"] == "negligible" and "survives Holm" in v.loc["b", "holm"]
    assert claims.verdict.__doc__ and claims.verdict("b").status == "negligible"


def test_a_rank_tested_claim_is_worded_by_its_rank_test_and_never_by_an_interval():
    assert "interval" not in claims.phrase("survey_encoder_decoder", "inconclusive")
    assert "rank test" in claims.phrase("survey_encoder_decoder", "inconclusive")
    assert "interval" in claims.phrase("training_symmetry", "inconclusive")
    with pytest.raises(CompanionError, match="unknown status 'mostly'"):
        claims.phrase("training_symmetry", "mostly")


def _v3_table(look="look 1 of 4 (3 seeds)", status="inconclusive", reading="inconclusive"):
    return pd.DataFrame([{"key": "training_symmetry", "claim": "Fig. 3a: ...", "body": "English mix (rules v3)",
                          "look": look, "seeds in": "3 of 12", "effect": "+0.10 [-0.10, +0.30], 3 seeds",
                          "d": 0.0072, "reading": reading, "status": status, "why": "",
                          "power (planned)": "P = 0.89"}])


V2_ROW = {"key": "training_symmetry", "claim": "Fig. 3a", "status": "not testable here", "measured": "v2 said so",
          "size": "Wikipedia", "chapter": "fig3_decided", "label": "f3-gate", "kind": "empirical", "check": "v2 check",
          "power": "v2 power", "rule_after": True, "status_v1": "refuted", "holm": "v2 family", "rules": "",
          "status_v2": "", "measured_v2": ""}


def test_a_training_claim_read_at_a_look_takes_the_training_rules_status_and_states_no_other():
    from companion.rules.v3 import load_rules_v3

    d = claims.v3_replaces(dict(V2_ROW), _v3_table())
    assert d["status"] == "inconclusive" and d["status_v2"] == "not testable here" and d["status_v1"] == "refuted"
    assert d["rules"] == f"training rules, version {load_rules_v3()['version']}, look 1 of 4 (3 seeds)"
    assert not d["rule_after"]
    assert d["measured"].startswith("+0.10 [-0.10, +0.30], 3 seeds at look 1 of 4 (3 seeds), 3 of 12 seeds in")
    assert "not testable here" not in d["measured"]        # the earlier rules' word is kept apart, not stated
    assert d["measured_v2"] == "v2 said so"
    claims.Verdict(**d)                                    # a status of the book's vocabulary


def test_before_v3s_first_look_and_for_a_claim_v3_does_not_judge_v2_stands():
    assert claims.v3_replaces(dict(V2_ROW), _v3_table(look="none yet", status="not read yet")) == V2_ROW
    other = {**V2_ROW, "key": "objective_swap"}
    assert claims.v3_replaces(dict(other), _v3_table()) == other


@pytest.mark.parametrize("v3_status, reading, status", [
    ("inconclusive (fixed sequence stopped at table_1)", "holds", "inconclusive"),
    ("holds (provisional: table_1 comes first in the fixed sequence and is still read)", "holds", "inconclusive"),
    ("refuted", "refuted", "refuted"),
])
def test_the_fixed_sequences_words_go_into_what_was_measured_its_outcome_into_the_status(v3_status, reading, status):
    d = claims.v3_replaces(dict(V2_ROW), _v3_table(status=v3_status, reading=reading))
    assert d["status"] == status and claims.Verdict(**d).status == status
    if v3_status != reading:
        assert f"its own reading {reading}, the family's {v3_status}" in d["measured"]


@pytest.mark.parametrize("v3_status, reading, withheld", [
    ("holds (provisional: Table 1 comes first in the fixed sequence and is still read)", "holds", "holds"),
    ("not testable here (provisional: Table 1 comes first in the fixed sequence and is still read)",
     "not testable here", "not testable here"),
    ("inconclusive", "inconclusive", ""),
    ("holds", "holds", ""),
])
def test_a_reading_the_fixed_sequence_withholds_is_never_worded_as_an_interval_that_allows_both(
        v3_status, reading, withheld):
    """'inconclusive (the interval allows both readings)' would be false of an interval above d
    that only the family holds back: the sentence names the claim's own reading instead."""
    d = claims.v3_replaces(dict(V2_ROW), _v3_table(status=v3_status, reading=reading))
    assert d["withheld_v3"] == withheld
    said = claims.phrase(d["key"], d["status"], d["withheld_v3"])
    if withheld:
        assert "allows both" not in said and f"read alone: '{withheld}'" in said
    else:
        assert said == claims.PHRASES[d["status"]]


def test_the_real_v3_readings_replace_exactly_the_claims_read_at_a_look():
    """On the landed runs: each v3 claim's status is v3's once read at a look, v2's before."""
    from companion.judge.training_v3 import verdicts_v3

    v3 = verdicts_v3()
    for _, r in v3.iterrows():
        d = claims.v3_replaces({**V2_ROW, "key": r["key"]}, v3)
        if r["look"] == "none yet":
            assert d["status"] == V2_ROW["status"]
        else:
            assert d["status"] == claims.status_from_v3(r["status"]) and r["effect"] in d["measured"]

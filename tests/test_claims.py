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
def test_the_earlier_rules_read_fig_3a_on_their_primary_body(monkeypatch, gaps, body_kw, expected, reason):
    """Version 2 (data/rules_history/) read Fig. 3a by the paired test of its primary body:
    each outcome, and each part of the gate, is reached by some runs (unigram reference 5.0
    nats; the context floor is ln 2, so a held-out loss of 4.6 is not trained enough)."""
    from companion.judge import empirical
    from companion.train.studies import evidence

    fake = _fake_body(gaps, **body_kw)
    monkeypatch.setattr(claims, "_CACHE", {})
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
    # the earlier rules' reading of the claim on this earlier body (the page "How the rules changed")
    from companion.judge.history import second_training_status

    assert second_training_status("training_symmetry")["status"] == expected


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


def test_holm_by_hand_still_gives_the_earlier_rules_family_for_the_history_page():
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
    assert (fam["family_size"] == 4).all()
    assert claims.blind_progress_text(4, 4, 0).startswith("None of the 4")
    assert claims.blind_progress_text(4, 1, 3) == ("1 of the 4 training claims have no pair of blind runs made yet and 3 have "
                                                   "fewer than the three seeds their verdict needs (the runs go on, in the "
                                                   "plan's order; data/runs/blind_plan.md).")


def _family(keys, outcomes, p, share=0.0025):
    fam = pd.DataFrame({"claim": keys, "key": keys, "outcome": outcomes, "p_decides": p, "family": "evidence",
                        "level (one-sided)": share})
    fam["stands"] = ["" if o in ("inconclusive", "not testable here") else ("yes" if q < share else "no")
                     for o, q in zip(fam["outcome"], fam["p_decides"])]
    return fam


def test_all_verdicts_carries_the_familys_share_into_the_status(monkeypatch):
    def fake(key, status):
        def fn():
            return claims.Verdict(key, f"claim {key}", status, "measured", "size", "errata", "", kind="empirical")
        fn.__name__ = key
        return fn

    monkeypatch.setattr(claims, "_CACHE", {})
    monkeypatch.setattr(claims, "VERDICTS", (fake("a", "holds"), fake("b", "negligible")))
    # a's deciding p (0.003) is below 0.025 but above its share 0.0025: read alone it holds, in the family not
    monkeypatch.setattr(claims, "family_table", lambda: _family(["a", "b"], ["holds", "negligible"], [0.003, 0.001]))
    v = claims.all_verdicts().set_index("key")
    assert v.loc["a", "status"] == "inconclusive" and v.loc["a", "withheld"] == "holds"
    assert "not decided at that level (deciding p = 0.003)" in v.loc["a", "family"]
    assert "read 'holds' alone" in v.loc["a", "measured"]
    assert v.loc["b", "status"] == "negligible" and "stands (deciding p = 0.001)" in v.loc["b", "family"]
    assert claims.verdict.__doc__ and claims.verdict("b").status == "negligible"
    said = claims.phrase("a", "inconclusive", "holds")
    assert "allows both" not in said and "read alone at 95%: 'holds'" in said


def test_the_familys_sentence_names_each_withdrawn_test_with_its_deciding_p():
    fam = _family(["a", "b", "c"], ["holds", "refuted", "inconclusive"], [0.01, 0.0001, np.nan])
    text = claims.family_sentence(fam)
    assert text.startswith("Of the 3 tests in the family, 2 reached a decided outcome at 95%, and 1 of those stand")
    assert "a (holds, deciding p = 0.01) does not, and reads 'inconclusive'" in text
    none = claims.family_sentence(_family(["c"], ["inconclusive"], [np.nan]))
    assert none.startswith("The one test in the family did not reach a decided outcome")


def test_the_claims_read_once_share_the_level_version_2s_holm_gave_them():
    """The family of the claims read once is split at 0.05 / 11 two-sided per test (version 2's
    family size), so no outcome is more decided than Holm over those 11 tests allowed:
    Bonferroni's rejections are a subset of Holm's."""
    from companion.rules.rulebook import load_rules

    f = load_rules()["framework"]["families"]["evidence"]
    assert f["alpha"] == pytest.approx(0.05 / 11, rel=1e-3) and f["tests"] == 7 and f["read_once"]
    assert f["tests"] * f["alpha"] / 2 <= f["fwer"]
    rng = np.random.default_rng(7)
    for _ in range(200):      # Bonferroni at alpha/2 never rejects what Holm over 11 at 0.025 does not
        p = rng.uniform(0, 0.01, 11)
        bonf = p < f["alpha"] / 2
        order = np.argsort(p)
        holm = np.zeros(11, bool)
        for k, i in enumerate(order):
            if p[i] < 0.025 / (11 - k):
                holm[i] = True
            else:
                break
        assert not (bonf & ~holm).any()


def test_a_rank_tested_claim_is_worded_by_its_rank_test_and_never_by_an_interval():
    assert "interval" not in claims.phrase("survey_encoder_decoder", "inconclusive")
    assert "rank test" in claims.phrase("survey_encoder_decoder", "inconclusive")
    assert "interval" in claims.phrase("training_symmetry", "inconclusive")
    with pytest.raises(CompanionError, match="unknown status 'mostly'"):
        claims.phrase("training_symmetry", "mostly")


def test_a_training_claim_takes_the_status_it_is_read_with_at_its_look_and_states_no_other():
    """On the landed runs: each training claim's status is its family's reading at the last
    complete look (a status of the book's vocabulary), with the look and the rules' version named."""
    from companion.judge.training_claims import training_verdicts
    from companion.rules.rulebook import load_rules

    table = training_verdicts()
    version = load_rules()["version"]
    for key in ("training_symmetry", "training_directionality", "symmetric_init_structure", "table_1"):
        r = table[table["key"] == key].iloc[0]
        v = getattr(claims, key)()
        if r["look"] == "none yet":
            assert v.status == "not testable here" and "not read yet" in v.measured
            continue
        assert v.status == (r["status"] if r["status"] in claims.STATUSES else "inconclusive")
        assert v.rules == f"verdict rules, version {version}, {r['look']}"
        assert v.measured.startswith(f"{r['effect']} at {r['look']}")
        assert v.withheld == ("" if v.status != "inconclusive" or r["reading"] == "inconclusive" else r["reading"])

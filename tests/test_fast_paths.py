"""The quick ways to the shared readings give what the slow ways give: the english-mix
assembly kept on disk, the body's runs read with their text as categories, the seeds and
devices of a pair found at once, the unigram reference kept on disk."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from companion.base.errors import CompanionError
from companion.train.text import english_mix as em

WORDS = ("the of and to in a is that for it as was with be by on not he this are or his from at which "
         "but have an they you were her she there been one all we their has would when if so no more").split()


def _raw(seed=3):
    rng = np.random.default_rng(seed)
    return [(src, [" ".join(rng.choice(WORDS, size=30)) + f" {src} {i}." for i in range(240)])
            for src in ("first", "second")]


def test_a_stored_assembly_is_the_assembly_and_is_read_not_made_again(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path))
    made = []

    def now():
        made.append(1)
        return em.assemble(_raw())

    archives = (("a.tgz", 1, 10), ("b.whl", 2, 20))
    first = em._stored_assembly(archives, now)
    again = em._stored_assembly(archives, now)
    slow = em.assemble(_raw())                 # assembled anew, independently
    assert len(made) == 1                      # the second came from the disk
    for corpus in (first, again):
        assert corpus.documents == slow.documents and corpus.sources == slow.sources
        assert corpus.held_out == slow.held_out and corpus.stats == slow.stats
    assert 0 < sum(again.held_out) < len(again.documents)


def test_a_stored_assembly_under_other_archives_or_edited_is_made_again(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path))
    made = []

    def now():
        made.append(1)
        return em.assemble(_raw())

    archives = (("a.tgz", 1, 10),)
    em._stored_assembly(archives, now)
    moved = (("a.tgz", 2, 10),)                # the archive was replaced (another modification time)
    assert em._assembly_key(moved) != em._assembly_key(archives)
    em._stored_assembly(moved, now)
    assert len(made) == 2
    stored, = (tmp_path / "assembled").glob("english-mix-*.json")   # the older key's file is gone
    assert stored.name == f"english-mix-{em._assembly_key(moved)}.json"
    data = json.loads(stored.read_text())
    data["documents"][0] = data["documents"][0] + " edited"
    stored.write_text(json.dumps(data))
    corpus = em._stored_assembly(moved, now)   # its documents no longer read to their hash
    assert len(made) == 3 and corpus.documents == em.assemble(_raw()).documents
    stored.write_text("{not json")
    em._stored_assembly(moved, now)
    assert len(made) == 4


def test_an_assembly_that_fails_is_refused_and_nothing_is_stored(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path))
    trivial = [("only", [f"too short {i}" for i in range(3)])]   # every document under MIN_WORDS
    with pytest.raises(CompanionError, match="both sides of the split"):
        em._stored_assembly((("a", 1, 1),), lambda: em.assemble(trivial))
    assert not list(tmp_path.glob("assembled/*.json"))


def _body_runs():
    """A small body in load_runs' form: two arms, three seeds, a device per run."""
    rows = []
    for mode, init in (("encoder", "standard"), ("decoder", "standard")):
        for seed in (30, 31, 32):
            run = f"b-{mode}-{init}-s{seed}"
            for step in (0, 50, 100):
                for q, v in (("eval_loss", 5.0 - step / 100 + seed / 1000 + (mode == "encoder") * 0.1),
                             ("train_loss", 6.0 - step / 100), ("lr", 1e-3)):
                    rows.append({"step": step, "quantity": q, "layer": -1, "head": -1, "value": v, "run": run,
                                 "mode": mode, "init": init, "seed": seed, "size": "tiny", "penalty": "none",
                                 "penalty_coef": 0.0, "label": f"{mode} / {init}",
                                 "device": "CPU" if (mode, seed) != ("decoder", 32) else "GPU"})
    return pd.DataFrame(rows).astype({c: "str" for c in ("quantity", "run", "mode", "init", "size", "penalty",
                                                           "label", "device")})


def test_the_categorical_frame_reads_the_same_values_seeds_and_devices():
    from companion.train.studies import registered_bodies as rb

    runs = _body_runs()
    fast = rb._reading_frame(runs)
    assert isinstance(fast["run"].dtype, pd.CategoricalDtype) and not isinstance(runs["run"].dtype, pd.CategoricalDtype)
    assert (fast.astype(runs.dtypes.to_dict()).to_numpy() == runs.to_numpy()).all()
    body = {"seeds": [30, 31, 32, 33]}
    arms = ("encoder/standard", "decoder/standard")
    # the seeds: the slow reading, a seed at a time, by hand
    slow = []
    for seed in body["seeds"]:
        if not all(((runs["mode"] == a.split("/")[0]) & (runs["init"] == a.split("/")[1]) & (runs["seed"] == seed)).any()
                   for a in arms):
            break
        slow.append(seed)
    assert rb.complete_seeds(fast, body, arms) == rb.complete_seeds(runs, body, arms) == slow == [30, 31, 32]
    rule = {"candidate": "encoder/standard", "comparator": "decoder/standard", "quantity": "eval_loss",
            "body": "b", "body_rule": {"steps": 100}}
    a, b = rb.paired_values(fast, rule, [30, 31], 50), rb.paired_values(runs, rule, [30, 31], 50)
    pd.testing.assert_series_equal(a, b, check_exact=True)
    expected = [0.1, 0.1]    # the encoder's loss is 0.1 above the decoder's at every step
    assert np.allclose(a.to_numpy(), expected)
    for frame in (fast, runs):   # seed 32's decoder ran on the GPU, its encoder on the CPU
        with pytest.raises(CompanionError, match="seed 32 of b: .* different devices \\(CPU, GPU\\)"):
            rb.paired_values(frame, rule, [30, 31, 32])


@pytest.mark.parametrize("causal", [False, True])
def test_every_moment_of_the_bias_term_table_is_the_one_numpy_gives_a_query_at_a_time(causal):
    """logit_moments centres each part once however many pairs hold it: all six moments
    agree with numpy's, query by query over the keys it sees, on rotated grouped heads."""
    import torch

    from companion.survey.bias_term import logit_moments, logit_parts

    g = torch.Generator().manual_seed(7)
    n, d, h, kv, d_h = 9, 12, 4, 2, 4
    Wq, Wk = torch.randn(h * d_h, d, generator=g), torch.randn(kv * d_h, d, generator=g)
    bq, bk, X = torch.randn(h * d_h, generator=g), torch.randn(kv * d_h, generator=g), torch.randn(n, d, generator=g)
    angle = torch.arange(n, dtype=torch.float64)[:, None] * torch.tensor([0.3, 0.7, 0.3, 0.7])[None]
    rope = (torch.cos(angle), torch.sin(angle))
    m = logit_moments(Wq, Wk, bq, bk, h, X, kv, rope, causal)
    C, B, P = (t.numpy() for t in logit_parts(Wq, Wk, bq, bk, h, X, kv, rope))
    seen = [slice(0, i + 1) if causal else slice(None) for i in range(n)]
    queries = range(1 if causal else 0, n)

    def moment(U, V):
        return np.array([np.mean([np.cov(U[k, i, seen[i]], V[k, i, seen[i]], bias=True)[0, 1] for i in queries])
                         for k in range(h)])

    direct = {"content": moment(C, C), "bias": moment(B, B), "cov": moment(C, B), "logits": moment(C + B, C + B),
              "positional": moment(P, P), "bias_tokens": moment(B - P, B - P)}
    assert list(m) == list(direct)
    for name, v in direct.items():
        np.testing.assert_allclose(m[name], v, rtol=1e-10, err_msg=name)
    assert direct["positional"].min() > 0 and np.abs(direct["cov"]).max() > 0


def test_the_zoo_gaps_are_the_verdicts_contrast_read_once_and_kept_beside_them(tmp_path, monkeypatch):
    """zoo_gaps is unit_gaps of the contrast the survey's verdict reads (taken from this
    process when a verdict computed it), kept in the verdict cache: a second process reads
    it there; make prepare fills it after every verdict."""
    from companion.judge import cache, claims, empirical_claims, prepare

    contrast = {"sym_enc": [0.5, 0.7, 0.6], "sym_dec": [0.1, 0.3], "dir_enc": [0.2, 0.4], "dir_dec": [0.05, 0.15, 0.1]}
    calls = []

    def fake():
        calls.append(1)
        return contrast

    monkeypatch.setattr(empirical_claims, "_zoo_contrast", fake)
    monkeypatch.setattr(claims, "_CACHE", {})
    monkeypatch.setenv("COMPANION_VERDICT_CACHE", str(tmp_path))
    cache._cached("zoo_contrast", fake)                      # as survey_encoder_decoder leaves it
    gaps = prepare.zoo_gaps()
    assert gaps == {"symmetry": pytest.approx(0.6 - 0.2), "directionality": pytest.approx(0.3 - 0.1)}
    assert len(calls) == 1                                   # the verdict's contrast, not scored again
    monkeypatch.setattr(claims, "_CACHE", {})                # another process: the disk copy
    assert prepare.zoo_gaps() == gaps and len(calls) == 1
    assert list(tmp_path.glob("zoo_gaps-*.json"))
    order = [n for n, _ in prepare._tables()]
    assert order.index("all_verdicts") < order.index("zoo_gaps") and "zoo_gaps" in prepare.LAST

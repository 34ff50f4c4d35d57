"""The training loop: bit-for-bit reproducible on the CPU, exact resume, tidy history, DDP."""

import os
import socket

import pandas as pd
import pytest
import torch

# one thread: the suite runs two workers on two cores, and oversubscribed threads are
# tens of times slower than one
torch.set_num_threads(1)

from companion.train.text.data import TokenData
from companion.train.runner.config import TrainConfig, lr_factor
from companion.train.runner.loop import train
from companion.train.models.objectives import MaskingSpec

VOCAB = 40


def _data(seed=0):
    g = torch.Generator().manual_seed(seed)
    # a learnable stream: a repeated random phrase with occasional noise
    phrase = torch.randint(5, VOCAB, (23,), generator=g)
    stream = phrase.repeat(200)
    noise = torch.rand(stream.shape, generator=g) < 0.05
    stream[noise] = torch.randint(5, VOCAB, (int(noise.sum()),), generator=g)
    blocks = stream[: (stream.numel() // 16) * 16].view(-1, 16)
    return TokenData(train=blocks[:-20], eval=blocks[-20:], vocab_size=VOCAB,
                     masking=MaskingSpec(mask_id=4, vocab_size=VOCAB, first_regular_id=5))


def _cfg(**kw):
    base = dict(size="micro", steps=12, batch_size=8, lr=3e-3, warmup=2, eval_every=4,
                eval_blocks=16, device="cpu")
    base.update(kw)
    return TrainConfig(**base)


def test_cpu_runs_are_bit_for_bit_reproducible():
    h1, m1 = train(_cfg(), data=_data(), return_model=True)
    h2, m2 = train(_cfg(), data=_data(), return_model=True)
    pd.testing.assert_frame_equal(h1, h2, check_exact=True)
    for (n, a), (_, b) in zip(m1.state_dict().items(), m2.state_dict().items()):
        assert torch.equal(a, b), n


def test_different_seeds_give_different_runs():
    h1 = train(_cfg(seed=0), data=_data())
    h2 = train(_cfg(seed=1), data=_data())
    assert not h1["value"].equals(h2["value"])


def test_resumed_run_equals_uninterrupted_run(tmp_path):
    cfg = _cfg(mode="decoder", init="symmetric")
    full, m_full = train(cfg, data=_data(), return_model=True)
    train(cfg, data=_data(), out_dir=tmp_path, stop_at=6)
    resumed, m_res = train(cfg, data=_data(), out_dir=tmp_path, resume=True, return_model=True)
    pd.testing.assert_frame_equal(full, resumed, check_exact=True)
    for (n, a), (_, b) in zip(m_full.state_dict().items(), m_res.state_dict().items()):
        assert torch.equal(a, b), n


def test_resume_with_another_configuration_is_refused(tmp_path):
    train(_cfg(), data=_data(), out_dir=tmp_path, stop_at=4)
    with pytest.raises(ValueError, match="different configuration"):  # CompanionError is a ValueError
        train(_cfg(lr=1e-2), data=_data(), out_dir=tmp_path, resume=True)


def test_history_is_tidy_with_per_layer_and_per_head_scores():
    h = train(_cfg(steps=8), data=_data())
    assert list(h.columns) == ["step", "quantity", "layer", "head", "value"]
    sym = h[h["quantity"] == "symmetry"]
    assert sorted(sym["step"].unique()) == [0, 4, 8]
    at0 = sym[sym["step"] == 0]
    assert sorted(at0["layer"].unique()) == [0, 1]
    assert sorted(at0["head"].unique()) == [-1, 0, 1]  # -1 = the layer's summed form
    assert len(h[h["quantity"] == "train_loss"]) == 8


def test_training_lowers_held_out_loss_on_a_learnable_stream():
    h = train(_cfg(mode="decoder", steps=40, eval_every=40), data=_data())
    ev = h[h["quantity"] == "eval_loss"].sort_values("step")["value"].to_numpy()
    assert ev[-1] < ev[0] - 0.5


def test_penalty_run_ends_more_symmetric_than_without():
    kw = dict(steps=30, eval_every=30, lr=3e-3)
    plain = train(_cfg(**kw), data=_data())
    pen = train(_cfg(penalty="symmetric", penalty_coef=5.0, **kw), data=_data())

    def final_sym(h):
        s = h[(h["quantity"] == "symmetry") & (h["head"] >= 0)]
        return s[s["step"] == s["step"].max()]["value"].mean()

    assert final_sym(pen) > final_sym(plain) + 0.2


def test_schedule_warms_up_then_decays_linearly_to_zero():
    f = [lr_factor(s, 10, 100) for s in range(100)]
    assert f[0] == pytest.approx(0.1) and f[9] == pytest.approx(1.0)
    assert f[10] == pytest.approx(1.0) and f[55] == pytest.approx(0.5)
    assert lr_factor(100, 10, 100) == 0.0


def test_a_longer_schedule_runs_its_first_steps_as_the_paper_does():
    # the paper (Appendix S2): 200 warm-up steps, then linear decay to 0 at step 200,000;
    # a run of 12 steps with decay_steps follows that schedule's first steps, not its own
    h = train(_cfg(steps=12, lr=5e-5, warmup=4, decay_steps=200_000), data=_data())
    lr = h[h.quantity == "lr"].set_index("step")["value"]
    # logged at step s (1-based): the rate step s used, the closed form at 0-based step s - 1
    want = {s: 5e-5 * (s / 4 if s - 1 < 4 else (200_000 - (s - 1)) / (200_000 - 4)) for s in lr.index}
    assert lr.to_dict() == pytest.approx(want, rel=1e-9)
    assert lr.iloc[-1] > 0.99 * 5e-5      # still at the peak, where the default schedule would be at 0
    with pytest.raises(ValueError, match="decay_steps"):
        _cfg(warmup=4, decay_steps=3)


def test_bad_configuration_is_a_clear_error():
    with pytest.raises(ValueError, match="warmup"):
        _cfg(warmup=50)
    with pytest.raises(ValueError, match="unknown model size"):
        _cfg(size="huge")


def _ddp_worker(rank, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE="2", LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    import torch.distributed as dist

    _, model = train(_cfg(steps=4, grad_accum=2, eval_every=4), data=_data(), return_model=True)
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    torch.save(flat, os.path.join(out, f"rank{rank}.pt"))
    dist.destroy_process_group()


@pytest.mark.slow
def test_ddp_with_gloo_keeps_two_ranks_in_sync(tmp_path):
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_ddp_worker, args=(port, str(tmp_path)), nprocs=2, join=True)
    a, b = torch.load(tmp_path / "rank0.pt"), torch.load(tmp_path / "rank1.pt")
    assert torch.equal(a, b)
    # the ranks trained: parameters moved away from the shared initialisation
    init = train(_cfg(steps=1, lr=0.0, warmup=0), data=_data(), return_model=True)[1]
    moved = torch.cat([p.detach().flatten() for p in init.parameters()])
    assert not torch.equal(a, moved)


def _ddp_resume_worker(rank, port, out, stop_at):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE="2", LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    import torch.distributed as dist

    cfg = _cfg(steps=6, eval_every=3, mode="encoder")
    if stop_at:
        train(cfg, data=_data(), out_dir=out, stop_at=stop_at)
        h, model = train(cfg, data=_data(), out_dir=out, resume=True, return_model=True)
    else:
        h, model = train(cfg, data=_data(), out_dir=out, return_model=True)
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    torch.save({"params": flat, "history": h.to_dict("list")}, os.path.join(out, f"final{rank}.pt"))
    dist.destroy_process_group()


def _spawn(fn, *args):
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(fn, args=(port, *args), nprocs=2, join=True)


@pytest.mark.slow
def test_resumed_two_process_run_reproduces_the_uninterrupted_one(tmp_path):
    # every rank masks its blocks with its own generator: the checkpoint must hold the
    # states of both ranks, or the resumed run draws other masks on rank 1
    full, part = tmp_path / "full", tmp_path / "part"
    full.mkdir(), part.mkdir()
    _spawn(_ddp_resume_worker, str(full), 0)
    _spawn(_ddp_resume_worker, str(part), 3)
    for rank in (0, 1):
        a = torch.load(full / f"final{rank}.pt", weights_only=True)
        b = torch.load(part / f"final{rank}.pt", weights_only=True)
        assert torch.equal(a["params"], b["params"]), rank
        assert a["history"] == b["history"], rank
    ck = torch.load(part / "checkpoint.pt", weights_only=True)
    assert len(ck["rng"]) == 2
    assert not torch.equal(ck["rng"][0]["mask"], ck["rng"][1]["mask"])


def test_eval_loss_and_its_standard_error_match_a_direct_computation():
    import numpy as np
    import torch.nn.functional as F

    from companion.train.runner.evaluation import EVAL_MASK_SEED, eval_loss
    from companion.train.models.bert import build_model, get_size
    from companion.train.models.objectives import SelectiveLM, mask_tokens

    torch.manual_seed(0)
    data = _data()
    model = build_model(get_size("micro"), VOCAB, "encoder")
    net = SelectiveLM(model).eval()
    cfg = _cfg(eval_blocks=16)
    mean, se, b = eval_loss(net, data, cfg, torch.device("cpu"))
    model.eval()  # eval_loss hands the model back in training mode
    # reference: full-vocabulary logits at every position, the same masks, per block
    g = torch.Generator().manual_seed(EVAL_MASK_SEED)
    sums, counts = [], []
    with torch.no_grad():
        for i in range(0, 16, cfg.batch_size):
            ids = data.eval[i:i + cfg.batch_size]
            inputs, labels = mask_tokens(ids, data.masking, g)
            logits = model(input_ids=inputs).logits
            ce = F.cross_entropy(logits.transpose(1, 2), labels, reduction="none", ignore_index=-100)
            sums += (ce * (labels != -100)).sum(1).tolist()
            counts += (labels != -100).sum(1).tolist()
    S, C = np.array(sums), np.array(counts, dtype=float)
    S, C = S[C > 0], C[C > 0]
    ref_mean = S.sum() / C.sum()
    n = len(S)
    ref_se = np.sqrt(((S - ref_mean * C) ** 2).sum() / (n * (n - 1))) / C.mean()
    assert b == n
    assert mean == pytest.approx(ref_mean, rel=1e-5)
    assert se == pytest.approx(ref_se, rel=1e-4)
    # and the estimator's own claim: a bootstrap over blocks gives about the same spread
    rng = np.random.default_rng(0)
    boots = [S[j].sum() / C[j].sum() for j in (rng.integers(0, n, n) for _ in range(4000))]
    assert np.std(boots) == pytest.approx(ref_se, rel=0.25)


def test_a_full_disk_keeps_the_previous_checkpoint_and_leaves_no_temporary(tmp_path, monkeypatch):
    import errno

    import companion.train.runner.checkpoints as checkpoints

    cfg = _cfg(steps=4, checkpoint_every=2)
    train(cfg, data=_data(), out_dir=tmp_path, stop_at=2)
    before = (tmp_path / "checkpoint.pt").read_bytes()
    real_save = torch.save

    def full_disk(obj, f, *a, **kw):
        real_save(obj, f, *a, **kw)  # part of the file is written, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoints.torch, "save", full_disk)
    from companion.base.errors import CompanionError

    with pytest.raises(CompanionError, match="No space left on device.*free some space and continue with --resume"):
        train(cfg, data=_data(), out_dir=tmp_path, resume=True)
    monkeypatch.setattr(checkpoints.torch, "save", real_save)
    assert (tmp_path / "checkpoint.pt").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt", "checkpoint.pt.sha256"]
    from companion.train.runner.checkpoints import load_checkpoint
    load_checkpoint(tmp_path / "checkpoint.pt")          # the kept checkpoint still matches its digest


def test_write_run_leaves_no_finished_looking_folder_when_it_fails(tmp_path, monkeypatch):
    from companion.train.runner.provenance import write_run

    h = train(_cfg(steps=2, eval_every=2), data=_data())

    def broken(self, path, *a, **kw):
        open(path, "w").write("step,quan")  # a partial write, then the failure
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", broken)
    from companion.base.errors import CompanionError

    with pytest.raises(CompanionError, match="the disk is full"):   # one line naming the cause and the fix
        write_run(tmp_path / "run", h, {"config": {}})
    assert not (tmp_path / "run" / "history.csv").exists()
    assert [p.name for p in (tmp_path / "run").iterdir()] == ["provenance.json"]


def test_an_older_checkpoint_without_newer_config_fields_still_resumes(tmp_path):
    cfg = _cfg(steps=4)
    full = train(cfg, data=_data())
    train(cfg, data=_data(), out_dir=tmp_path, stop_at=2)
    ck = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    for name in ("layers", "width", "heads"):  # fields a checkpoint written earlier lacks
        del ck["config"][name]
    torch.save(ck, tmp_path / "checkpoint.pt")
    (tmp_path / "checkpoint.pt.sha256").unlink()        # such a checkpoint carried no digest either
    with pytest.warns(UserWarning, match="unverified"):
        resumed = train(cfg, data=_data(), out_dir=tmp_path, resume=True)
    pd.testing.assert_frame_equal(full, resumed, check_exact=True)


def test_shape_overrides_build_the_model_they_name():
    from companion.train.models.bert import qk_weights

    h, model = train(_cfg(steps=2, eval_every=2, layers=3, width=48, heads=3), data=_data(),
                     return_model=True)
    assert model.config.num_hidden_layers == 3 and model.config.hidden_size == 48
    assert model.config.intermediate_size == 192 and model.config.num_attention_heads == 3
    assert [w.shape for w, _ in qk_weights(model)] == [(48, 48)] * 3
    assert sorted(h[(h["quantity"] == "symmetry")]["head"].unique()) == [-1, 0, 1, 2]
    with pytest.raises(ValueError, match="divisible"):
        _cfg(width=50, heads=3)


def test_a_diverged_run_is_named_as_diverged_not_as_a_bad_checkpoint(tmp_path):
    from companion.base.errors import CompanionError

    with pytest.raises(CompanionError, match=r"training diverged: the training loss is (nan|inf) at step \d+"):
        train(_cfg(steps=12, optimizer="sgd", lr=1e12, warmup=0, weight_decay=0.0, eval_every=12),
              data=_data(), out_dir=tmp_path)
    assert not (tmp_path / "history.csv").exists()


def test_bf16_autocast_only_where_the_card_computes_bf16_natively(monkeypatch):
    """A T4 (capability 7.5) would emulate bf16, slower than float32: the pass stays float32."""
    import torch

    from companion.train.runner import devices
    from companion.train.runner.config import TrainConfig

    cfg = TrainConfig()
    cuda = torch.device("cuda", 0)
    for capability, expected in (((7, 5), False), ((7, 0), False), ((8, 0), True), ((9, 0), True)):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None, c=capability: c)
        assert devices.native_bf16(cuda) is expected
        seen = {}
        monkeypatch.setattr(torch, "autocast", lambda device_type, dtype, enabled: seen.update(enabled=enabled))
        devices._autocast(cfg, cuda)
        assert seen["enabled"] is expected, capability
    cpu = torch.device("cpu")
    monkeypatch.setattr(torch, "autocast", lambda device_type, dtype, enabled: seen.update(enabled=enabled))
    devices._autocast(TrainConfig(cpu_bf16=True), cpu)
    assert seen["enabled"] is True


# ---------------------------------------------------------------- rules v3's one-mode guard


def test_the_guard_reads_seen_and_unseen_blocks_as_the_draws_decide(tmp_path):
    """The guard's 'seen' sample holds only blocks the run drew, 'unseen' only blocks it did
    not: replaying the run's data generator (seed + 1) independently gives the drawn set."""
    from companion.train.runner.evaluation import guard_samples

    cfg = _cfg(steps=8, eval_every=4, eval_blocks=6, guard=True)
    g = torch.Generator().manual_seed(7)   # random blocks: every block's content is its own
    blocks = torch.randint(5, VOCAB, (120, 16), generator=g)
    data = TokenData(train=blocks[:-20], eval=blocks[-20:], vocab_size=VOCAB,
                     masking=MaskingSpec(mask_id=4, vocab_size=VOCAB, first_regular_id=5))
    assert len({tuple(b.tolist()) for b in blocks}) == 120
    hist = train(cfg, data=data)
    g = torch.Generator().manual_seed(cfg.seed + 1)
    drawn = set()
    for _ in range(cfg.steps):
        drawn |= set(torch.randint(0, data.train.shape[0], (cfg.batch_size,), generator=g).tolist())
    seen = torch.zeros(data.train.shape[0], dtype=torch.bool)
    seen[list(drawn)] = True
    share = hist[(hist.quantity == "guard_seen_share") & (hist.step == cfg.steps)]["value"].item()
    assert share == pytest.approx(len(drawn) / data.train.shape[0], abs=1e-6)
    samples = guard_samples(data, cfg, seen)
    rows_of = {tuple(r.tolist()): i for i, r in enumerate(data.train)}
    assert all(seen[rows_of[tuple(b.tolist())]] for b in samples["seen"])
    assert not any(seen[rows_of[tuple(b.tolist())]] for b in samples["unseen"])
    assert samples["seen"].shape[0] == samples["unseen"].shape[0] == samples["heldout"].shape[0] == 6
    for q in ("guard_seen_loss", "guard_unseen_loss", "guard_heldout_loss"):
        assert hist[(hist.quantity == q) & (hist.step == cfg.steps)]["value"].notna().all(), q


def test_the_guard_losses_are_eval_mode_losses_of_their_samples():
    """guard_heldout_loss equals eval_loss computed on the same blocks by hand (no dropout)."""
    from companion.train.runner.evaluation import eval_loss, guard_samples

    cfg = _cfg(steps=4, eval_every=4, eval_blocks=6, guard=True)
    data = _data()
    hist, model = train(cfg, data=data, return_model=True)
    from companion.train.models.objectives import SelectiveLM

    seen = torch.zeros(data.train.shape[0], dtype=torch.bool)  # the held-out sample does not depend on it
    blocks = guard_samples(data, cfg, seen)["heldout"]
    mean, _, _ = eval_loss(SelectiveLM(model), data, cfg, torch.device("cpu"), blocks=blocks)
    logged = hist[(hist.quantity == "guard_heldout_loss") & (hist.step == 4)]["value"].item()
    assert logged == pytest.approx(mean, rel=1e-6)


def test_a_resumed_run_with_the_guard_equals_the_uninterrupted_one_and_keeps_its_weights(tmp_path):
    from safetensors.torch import load_file

    from companion.base.cache import sha256_file
    from companion.train.runner.checkpoints import kept_weights_path

    cfg = _cfg(steps=12, guard=True, keep_weights=(6, 12), checkpoint_every=6)
    full, m_full = train(cfg, data=_data(), out_dir=tmp_path / "a", return_model=True)
    train(cfg, data=_data(), out_dir=tmp_path / "b", stop_at=6)
    resumed = train(cfg, data=_data(), out_dir=tmp_path / "b", resume=True)
    pd.testing.assert_frame_equal(full, resumed, check_exact=True)
    final = load_file(kept_weights_path(tmp_path / "a", 12))
    for name, tensor in m_full.state_dict().items():
        assert torch.equal(final[name], tensor.float()), name
    for step in (6, 12):
        p = kept_weights_path(tmp_path / "b", step)
        assert (p.parent / f"{p.name}.sha256").read_text().strip() == sha256_file(p)
    half = load_file(kept_weights_path(tmp_path / "a", 6))
    assert any(not torch.equal(half[n], final[n]) for n in final)


def test_kept_weights_must_name_steps_of_the_run():
    with pytest.raises(ValueError, match="keep_weights"):
        _cfg(steps=12, keep_weights=(13,))


@pytest.mark.parametrize("killed_before_rename", [1, 2])
def test_a_run_killed_while_installing_its_checkpoint_resumes_its_own_run(tmp_path, monkeypatch, killed_before_rename):
    """Killed after the checkpoint's file is renamed into place but before its digest (2), or
    before either (1): --resume continues the run, never refusing its own checkpoint, and the
    history equals the run that was never interrupted."""
    import os

    import companion.train.runner.checkpoints as checkpoints

    cfg = _cfg(steps=4, checkpoint_every=2)
    full = train(cfg, data=_data())
    train(cfg, data=_data(), out_dir=tmp_path, stop_at=2)
    real_replace, calls = os.replace, []

    class Killed(BaseException):
        pass

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == killed_before_rename:
            raise Killed
        real_replace(src, dst)

    monkeypatch.setattr(checkpoints.os, "replace", replace)
    with pytest.raises(Killed):
        train(cfg, data=_data(), out_dir=tmp_path, resume=True, stop_at=4)
    monkeypatch.setattr(checkpoints.os, "replace", real_replace)
    resumed = train(cfg, data=_data(), out_dir=tmp_path, resume=True)
    pd.testing.assert_frame_equal(full, resumed, check_exact=True)
    assert not (tmp_path / "checkpoint.pt.sha256.pending").exists() or killed_before_rename == 1


def test_each_sitting_of_a_run_records_its_machine_from_the_step_it_began(tmp_path):
    from companion.base.runtime import describe_machine

    cfg = _cfg(steps=4)
    train(cfg, data=_data(), out_dir=tmp_path, stop_at=2)
    resumed = train(cfg, data=_data(), out_dir=tmp_path, resume=True)
    sittings = resumed.attrs["sittings"]
    assert [s["from_step"] for s in sittings] == [0, 2]
    here = describe_machine("cpu")
    assert all(s["cpu_model"] == here["cpu_model"] and s["device"] == here["device"] for s in sittings)
    # a checkpoint written before machines were recorded: its first sitting's machine is unknown
    train(cfg, data=_data(), out_dir=tmp_path / "old", stop_at=2)
    ck = torch.load(tmp_path / "old" / "checkpoint.pt", weights_only=True)
    del ck["sittings"]
    torch.save(ck, tmp_path / "old" / "checkpoint.pt")
    (tmp_path / "old" / "checkpoint.pt.sha256").unlink()
    with pytest.warns(UserWarning, match="unverified"):
        old = train(cfg, data=_data(), out_dir=tmp_path / "old", resume=True)
    assert [(s["from_step"], s["cpu_model"]) for s in old.attrs["sittings"]] == [(0, "not recorded"),
                                                                                (2, here["cpu_model"])]


def test_the_machine_names_its_cpu_model_and_its_bf16_features():
    from companion.base.runtime import describe_machine

    info = ("processor\t: 0\nmodel name\t: Example CPU 9000\nflags\t\t: fpu sse2 avx512f avx512_bf16\n\n"
            "processor\t: 1\nmodel name\t: Example CPU 9000\nflags\t\t: fpu sse2 avx512f avx512_bf16\n")
    m = describe_machine("cpu", cpuinfo=info)
    assert m["cpu_model"] == "Example CPU 9000" and m["cpu_bf16_features"] == ["avx512_bf16"]
    assert describe_machine("cpu", cpuinfo="flags : fpu amx_bf16 avx512_bf16\n")["cpu_bf16_features"] == \
        ["avx512_bf16", "amx_bf16"]


def test_a_progress_line_counts_its_time_by_a_clock_that_a_changed_system_time_cannot_move(monkeypatch):
    """The packer reads each progress line's 'elapsed' to pace its runs: with the system
    clock set back an hour at every reading, the lines still count from 0 upwards."""
    import re
    import time as _time

    real = _time.time
    calls = {"n": 0}

    def set_back():   # every reading an hour before the one before it
        calls["n"] += 1
        return real() - 3600.0 * calls["n"]

    monkeypatch.setattr(_time, "time", set_back)
    lines = []
    train(_cfg(), data=_data(), progress=lines.append)
    monkeypatch.setattr(_time, "time", real)
    elapsed = [int(m.group(1)) for m in (re.search(r"elapsed (-?\d+)s", s) for s in lines) if m]
    assert len(elapsed) == len(lines) >= 3
    assert all(0 <= e < 600 for e in elapsed) and elapsed == sorted(elapsed)

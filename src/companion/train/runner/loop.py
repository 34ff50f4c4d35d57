"""The training loop: AdamW, warmup + linear decay, eval loss and structure scores (Sec. 4).

One function, :func:`train`, runs a configuration (:class:`TrainConfig`) and returns a
tidy history table with one row per ``(step, quantity, layer, head)``.  It reads as a
sequence of named steps over one state object (``_Run``): set-up (device, data, model,
optimiser, schedule, generators), resume (the refusals, then the checkpoint's state), and
per step accumulate (micro-batches), update (clip, optimiser, schedule, penalty), evaluate
(held-out loss, structure scores, memorisation guard) and checkpoint.  The rows:

``train_loss``, ``eval_loss``, ``lr``, ``penalty``
    ``layer = head = -1``.
``symmetry``, ``directionality``
    per layer (``head = -1``: the layer's full form ``M = sum_h Wq_h^T Wk_h``, what the
    paper's figures show) and per head (``head = 0..H-1``: ``M_h = Wq_h^T Wk_h``), from
    :mod:`companion.core.scores` in float64, logged every ``eval_every`` steps and at step 0.

Reproducibility and resume
--------------------------
Every random draw has its own generator: model initialisation (``seed``), the order of
training blocks and the masking (``seed + 1``, ``seed + 2``) and dropout (torch's global
generator, seeded with ``seed``).  Evaluation masks come from a fixed generator, so eval
losses of different runs and steps see the same corruption.  A checkpoint stores model,
optimiser, scheduler, every rank's generator states and the history, in types that
``torch.load(weights_only=True)`` accepts (a checkpoint is never unpickled), so a resumed
run continues exactly where it stopped; on the CPU two runs with the same configuration
agree bit for bit, and so do a resumed and an uninterrupted two-process run (tests).

Evaluation
----------
The held-out loss is the mean cross-entropy over every target of the held-out blocks
(``eval_blocks=None``: the whole held-out split) or of the first ``eval_blocks`` of them.
Its standard error (``eval_loss_se`` in the history) treats blocks as the independent
units: the ratio estimator's standard error of sum(loss) / sum(targets) over blocks.

No host synchronisation per step
--------------------------------
The masked objectives gather a fixed number of positions
(:func:`~companion.train.models.objectives.target_bound`), so shapes never depend on the draw and
``torch.compile`` sees one graph; losses stay on the device and are copied to the host
only when they are logged (at each evaluation and checkpoint).

GPU and several GPUs
--------------------
On CUDA the forward pass runs under bf16 autocast (``bf16=True``) where the card computes
bf16 natively (compute capability 8.0 or later: A100, H100, L4; not a T4 or V100, where
PyTorch would emulate it, slower than float32, so the pass stays in float32), AdamW is
fused, and TF32 matmuls are allowed.  Launched with ``torchrun --nproc_per_node N``, the loop joins
the process group (NCCL on GPUs, gloo on CPUs), wraps the model in
``DistributedDataParallel``, gives each rank its slice of every global batch and skips the
gradient all-reduce on all but the last accumulation micro-batch.  Rank 0 logs and writes.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import stat
import time
from dataclasses import MISSING, asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ...core.bilinear import bilinear_form, head_factors
from ...base.cache import sha256_file
from ...base.errors import CompanionError
from ...core.scores import directionality_score, symmetry_score, symmetry_score_factored, directionality_score_factored
from ..text.data import TokenData, token_data_for_corpus
from ..models.init import PENALTIES, initialize, symmetry_penalty
from ..models.bert import MODEL_SIZES, build_model, get_size, is_causal, num_heads, num_kv_heads, qk_weights
from ..models.objectives import SelectiveLM, objective_loss, objective_terms
from .updates import UpdateRecorder, make_optimizer

__all__ = ["TrainConfig", "train", "structure_rows", "write_run", "read_run", "EVAL_MASK_SEED",
           "eval_loss", "load_checkpoint", "guard_samples", "EVAL_MASK_SEED", "GUARD_SEEDS",
           "kept_weights_path"]

EVAL_MASK_SEED = 1234
#: the seeds of the guard's fixed orders of the training and the held-out blocks
GUARD_SEEDS = (4321, 4322)


@dataclass
class TrainConfig:
    """Everything that defines a run.  Defaults follow the paper (Appendix S2) where it applies.

    The paper: AdamW, lr 5e-5, 200 warmup steps, linear decay, weight decay 0.01, batch
    32 x 8 accumulation, 200k steps.  Small CPU runs need a larger learning rate to move
    within a few hundred steps; the book states the one each cached run used.
    """

    mode: str = "encoder"
    init: str = "standard"
    size: str = "tiny"
    seed: int = 0
    steps: int = 200
    batch_size: int = 16
    grad_accum: int = 1
    lr: float = 1e-3
    warmup: int = 20
    decay_steps: int | None = None  # step at which the linear decay reaches 0; None: ``steps``
    weight_decay: float = 0.01
    optimizer: str = "adamw"        # companion.train.runner.updates.OPTIMIZERS
    update_every: int | None = None  # log the structure of every N-th update (updates.py); None: off
    max_grad_norm: float = 1.0
    eval_every: int = 20
    eval_blocks: int | None = 64
    penalty: str = "none"
    penalty_coef: float = 0.0
    corpus: str = "wikipedia"
    top_k: int | None = 4096
    seq_len: int | None = None
    layers: int | None = None     # overrides of the named size's shape (compute study)
    width: int | None = None      # hidden size; the feed-forward width follows as 4 x width
    heads: int | None = None
    bf16: bool = True
    cpu_bf16: bool = False   # bf16 autocast on the CPU too (about 1.7x faster where the CPU has AVX-512 BF16)
    compile: bool = False
    device: str | None = None
    checkpoint_every: int = 0
    smoothing: int = 1
    init_from: str | None = None  # start from this checkpoint's weights (zoo name, folder, hub id)
    eval_other: bool = False      # also log the held-out loss of the other objective (eval_loss_other)
    guard: bool = False           # log the one-mode memorisation guard (guard_train_loss, guard_heldout_loss)
    keep_weights: tuple = ()      # steps whose model weights are kept beside the run (weights-stepN.safetensors)
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        get_size(self.size)
        if self.init_from is not None:
            self._from_checkpoint()
        if self.eval_other and (self.init_from is None or self.mode not in OTHER_OBJECTIVE):
            raise ValueError("eval_other compares the two objectives of a checkpoint's swap: it needs init_from "
                             f"and mode encoder or decoder (got init_from={self.init_from!r}, mode={self.mode!r}).")
        if self.penalty not in PENALTIES:
            raise ValueError(f"unknown penalty {self.penalty!r}; choose one of {PENALTIES}.")
        for name in ("steps", "batch_size", "grad_accum", "eval_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1; got {getattr(self, name)}.")
        if self.warmup < 0 or self.warmup > self.steps:
            raise ValueError(f"warmup must lie in [0, steps={self.steps}]; got {self.warmup} (a horizon shorter "
                             "than the warm-up never reaches the peak learning rate).")

        from .updates import OPTIMIZERS

        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {self.optimizer!r}; choose one of {OPTIMIZERS}.")
        if self.update_every is not None and (isinstance(self.update_every, bool) or
                                              not isinstance(self.update_every, int) or self.update_every < 1):
            raise ValueError(f"update_every must be a whole number of steps >= 1 (or None to log no updates); "
                             f"got {self.update_every!r}.")
        if self.decay_steps is not None and self.decay_steps < max(self.warmup, 1):
            raise ValueError(f"decay_steps must be >= warmup ({self.warmup}) and >= 1; got {self.decay_steps} "
                             "(it is the step at which the learning rate reaches 0).")
        if self.eval_blocks is not None and self.eval_blocks < 1:
            raise ValueError(f"eval_blocks must be >= 1, or None for the whole held-out split; "
                             f"got {self.eval_blocks} (0 blocks would record a loss of 0).")
        self.keep_weights = tuple(self.keep_weights or ())
        bad = [k for k in self.keep_weights if isinstance(k, bool) or not isinstance(k, int) or not 0 < k <= self.steps]
        if bad:
            raise ValueError(f"keep_weights lists steps of this run (whole numbers in 1..{self.steps}); got {bad[0]!r}.")
        for name in ("layers", "width", "heads", "seq_len"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise ValueError(f"{name} must be >= 1 when given; got {v}.")
        shape = self.model_size
        if shape.hidden_size % shape.num_attention_heads:
            raise ValueError(f"width {shape.hidden_size} is not divisible by {shape.num_attention_heads} heads.")
        for name in ("lr", "weight_decay", "penalty_coef", "max_grad_norm"):
            v = getattr(self, name)
            if not math.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite number >= 0; got {v!r}.")

    def _from_checkpoint(self):
        """Starting from a checkpoint: its own vocabulary and weights, its shape."""
        from ..models.pretrained import checkpoint_shape

        if self.top_k:
            raise ValueError("training from a checkpoint uses its own full vocabulary; pass top_k=None "
                             "(--top-k 0).")
        if self.init != "standard":
            raise ValueError(f"init={self.init!r} would replace the checkpoint's attention weights; keep "
                             "'standard' when starting from a checkpoint.")
        for name, value in zip(("layers", "width", "heads"), checkpoint_shape(self.init_from)):
            mine = getattr(self, name)
            if mine is None:
                setattr(self, name, value)
            elif mine != value:
                raise ValueError(f"{name}={mine} disagrees with the checkpoint {self.init_from} ({value}).")

    @property
    def model_size(self):
        """The named size with this run's overrides (sequence length, depth, width, heads)."""
        from dataclasses import replace

        s = get_size(self.size)
        over = {}
        if self.seq_len is not None:
            over["seq_len"] = self.seq_len
            over["max_position_embeddings"] = max(s.max_position_embeddings, self.seq_len)
        if self.layers is not None:
            over["num_hidden_layers"] = self.layers
        if self.width is not None:
            over["hidden_size"] = self.width
            over["intermediate_size"] = 4 * self.width
        if self.heads is not None:
            over["num_attention_heads"] = self.heads
        if over and (self.layers or self.width or self.heads):
            over["name"] = f"{s.name}-custom"
        return replace(s, **over) if over else s

    @property
    def schedule_total(self) -> int:
        """The step at which the linear decay reaches 0: ``decay_steps``, else ``steps``.

        A run shorter than its schedule (``decay_steps > steps``) is the first ``steps``
        steps of a longer schedule, e.g. the paper's 200 warm-up steps and decay over
        200,000 steps (Appendix S2) followed for a CPU-sized number of steps.
        """
        return self.steps if self.decay_steps is None else self.decay_steps

    def to_dict(self) -> dict:
        return asdict(self)


def lr_factor(step: int, warmup: int, total: int) -> float:
    """Linear warmup to 1 over ``warmup`` steps, then linear decay to 0 at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


def structure_rows(model, step: int) -> list[dict]:
    """Per-layer and per-head symmetry and directionality of the model's query-key forms."""
    n_heads, n_kv = num_heads(model), num_kv_heads(model)
    rows = []
    for layer, (wq, wk) in enumerate(qk_weights(model)):
        wq64, wk64 = wq.double().cpu(), wk.double().cpu()
        M = bilinear_form(wq64, wk64, n_heads, n_kv)
        rows.append(dict(step=step, quantity="symmetry", layer=layer, head=-1, value=symmetry_score(M)))
        rows.append(dict(step=step, quantity="directionality", layer=layer, head=-1,
                         value=directionality_score(M)))
        Q, K = head_factors(wq64, wk64, n_heads, n_kv)
        sym = np.atleast_1d(symmetry_score_factored(Q, K))
        dirs = np.atleast_1d(directionality_score_factored(Q, K))
        for h in range(n_heads):
            rows.append(dict(step=step, quantity="symmetry", layer=layer, head=h, value=float(sym[h])))
            rows.append(dict(step=step, quantity="directionality", layer=layer, head=h,
                             value=float(dirs[h])))
    return rows


def _as_tensor(blocks) -> torch.Tensor:
    return blocks if isinstance(blocks, torch.Tensor) else blocks.tensor()


OTHER_OBJECTIVE = {"encoder": "decoder", "decoder": "encoder"}


def _mask_switch(model):
    """The model whose attention mask is a switch (``causal``), or None (BERT classes)."""
    model = getattr(model, "_orig_mod", model)  # torch.compile
    model = getattr(model, "module", model)     # DistributedDataParallel
    if not hasattr(model, "causal"):
        model = getattr(model, "model", model)  # SelectiveLM
    return model if hasattr(model, "causal") else None


def guard_samples(data: TokenData, cfg: TrainConfig, seen: torch.Tensor) -> dict:
    """The block samples of the one-mode memorisation guard (rules v3), each as many blocks as
    the held-out loss reads, in eval mode with the held-out masks:

    ``seen``
        training blocks the run has drawn at least once so far;
    ``unseen``
        training blocks it has not drawn yet (the same split, the same documents' mix: which
        blocks are seen is decided by the run's own uniform draws, so only memorising can
        make the two differ);
    ``heldout``
        a uniform random sample of the held-out split (split by document: on a corpus whose
        sources differ in size, its mix of sources is not the training split's, so it is
        the reference only where every training block has been seen).

    Each is the first blocks of one fixed random order of its split (:data:`GUARD_SEEDS`)
    that meet the condition, so a run reads the same blocks at every evaluation as long as
    they stay seen or unseen."""
    n_eval = data.eval.shape[0] if cfg.eval_blocks is None else min(cfg.eval_blocks, data.eval.shape[0])
    order = torch.randperm(data.train.shape[0], generator=torch.Generator().manual_seed(GUARD_SEEDS[0]))
    held = torch.randperm(data.eval.shape[0], generator=torch.Generator().manual_seed(GUARD_SEEDS[1]))[:n_eval]
    picks = {"seen": order[seen[order]][:n_eval], "unseen": order[~seen[order]][:n_eval]}
    out = {k: _as_tensor(data.train[v.sort().values]) for k, v in picks.items() if v.numel()}
    out["heldout"] = _as_tensor(data.eval[held.sort().values])
    return out


@torch.no_grad()
def eval_loss(net, data: TokenData, cfg: TrainConfig, device, mode: str | None = None,
              blocks=None) -> tuple[float, float, int]:
    """Held-out loss over fixed blocks and fixed masks (no dropout): ``(mean, se, blocks)``.

    ``mode`` evaluates another objective than the run's (``eval_other``): the model's mask
    switch is set for it and restored afterwards.  ``blocks`` reads other blocks than the
    held-out ones with the same masks and in the same mode (the samples of
    :func:`guard_samples`, for the one-mode memorisation guard).

    ``mean`` is sum(loss) / sum(targets) over all targets; ``se`` its standard error with
    blocks as the independent units (ratio estimator), ``nan`` with fewer than 2 blocks.
    """
    mode = cfg.mode if mode is None else mode
    switch = _mask_switch(net) if mode != cfg.mode else None
    if mode != cfg.mode and switch is None:
        raise CompanionError("the other objective's loss needs a model whose attention mask is a switch "
                             "(a LLaMA checkpoint); BERT training models fix theirs in the class.")
    was = switch.causal if switch is not None else None
    if switch is not None:
        switch.causal = is_causal(mode)
    net.eval()
    if blocks is None:
        blocks = data.eval if cfg.eval_blocks is None else data.eval[: cfg.eval_blocks]
    g = torch.Generator().manual_seed(EVAL_MASK_SEED)
    sums, counts = [], []
    try:
        for i in range(0, blocks.shape[0], cfg.batch_size):
            ids = _as_tensor(blocks[i: i + cfg.batch_size])
            with _autocast(cfg, device):
                losses, block, valid = objective_terms(net, ids, mode, data.masking, g)
            w = valid.to(torch.float64)
            sums.append(torch.zeros(ids.shape[0], dtype=torch.float64, device=losses.device)
                        .index_add_(0, block, losses.double() * w))
            counts.append(torch.zeros(ids.shape[0], dtype=torch.float64, device=losses.device)
                          .index_add_(0, block, w))
    finally:
        if switch is not None:
            switch.causal = was
    net.train()
    S, C = torch.cat(sums).cpu(), torch.cat(counts).cpu()
    keep = C > 0
    S, C = S[keep], C[keep]
    b = int(keep.sum())
    if b == 0:
        raise ValueError("the held-out blocks hold no prediction targets; use more eval blocks.")
    mean = float(S.sum() / C.sum())
    se = float(((S - mean * C) ** 2).sum().div(b * (b - 1)).sqrt() / C.mean()) if b > 1 else float("nan")
    return mean, se, b


def native_bf16(device) -> bool:
    """Whether ``device`` (a CUDA device) computes bf16 natively: compute capability 8.0 or
    later.  Older cards (a T4 on a free Colab runtime, a V100) only emulate it."""
    major, _ = torch.cuda.get_device_capability(device)
    return major >= 8


def _autocast(cfg, device):
    enabled = ((bool(cfg.bf16) and device.type == "cuda" and native_bf16(device))
               or (bool(cfg.cpu_bf16) and device.type == "cpu"))
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=enabled)


def _distributed():
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 1, 0, None
    import torch.distributed as dist

    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend=backend)
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device(f"cuda:{local}") if torch.cuda.is_available() else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    return world, dist.get_rank(), device


def _rng_state(gens: dict) -> dict:
    state = {k: g.get_state() for k, g in gens.items()}
    state["torch"] = torch.get_rng_state()
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _all_rng_states(gens: dict, world: int) -> list[dict]:
    """Every rank's generator states, gathered on all ranks (rank order)."""
    mine = _rng_state(gens)
    if world == 1:
        return [mine]
    import torch.distributed as dist

    states: list = [None] * world
    dist.all_gather_object(states, mine)
    return states


def _set_rng_state(gens: dict, state: dict) -> None:
    for k, g in gens.items():
        g.set_state(state[k])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def digest_path(path: Path) -> Path:
    """Where a checkpoint's SHA-256 is kept: ``checkpoint.pt.sha256`` beside it."""
    return path.with_name(path.name + ".sha256")


def pending_digest_path(path: Path) -> Path:
    """Where the digest of a checkpoint being installed waits: ``checkpoint.pt.sha256.pending``."""
    return path.with_name(path.name + ".sha256.pending")


def _install_checkpoint(tmp: Path, path: Path) -> None:
    """Put the checkpoint written to ``tmp`` in place at ``path`` with its digest.

    The new file's digest is written first, as *pending*; then the file and the digest are
    renamed into place, in that order.  A kill at any point leaves either the old pair or the
    new checkpoint with its pending digest, which :func:`load_checkpoint` recognises, so a
    run killed while saving resumes from its own checkpoint."""
    from ...base.outputs import check_output, write_text_atomic

    digest, pending = digest_path(path), pending_digest_path(path)
    write_text_atomic(sha256_file(tmp) + "\n", pending, what="checkpoint digest")
    check_output(path, "checkpoint")       # a link or FIFO there is refused, never replaced
    check_output(digest, "checkpoint digest")
    os.replace(tmp, path)
    os.replace(pending, digest)


def _first_word(path: Path) -> str:
    return (path.read_bytes().decode("utf-8", "replace").split() or [""])[0]


def load_checkpoint(path: str | Path, device="cpu", verify: bool = True) -> dict:
    """Read a checkpoint without unpickling code (``weights_only=True``), or explain why not.

    With ``verify`` the file's SHA-256 must match the digest written beside it
    (``checkpoint.pt.sha256``) when it was saved: a checkpoint changed on disk, even by one
    byte, would resume a different run.  A checkpoint from before digests is resumed with a
    warning."""

    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except OSError as err:
        raise CompanionError(f"cannot read the checkpoint {path}: {err.strerror or err}.") from None
    if not stat.S_ISREG(mode):
        raise CompanionError(f"the checkpoint {path} is not a regular file (a folder, FIFO or device), so it is "
                             "not read; move it away, or start the run again with --overwrite.")
    if verify:
        digest = digest_path(path)
        if digest.exists() and not digest.is_file():
            raise CompanionError(f"{digest} is not a regular file; move it away, or start the run again "
                                 "with --overwrite.")
        pending = pending_digest_path(path)
        if not digest.exists() and pending.is_file() and _first_word(pending) == sha256_file(path):
            os.replace(pending, digest)   # killed before the first checkpoint's digest was in place
        if not digest.exists():  # written before checkpoints carried a digest
            import warnings

            warnings.warn(f"{path} has no {digest.name} beside it (written by an older version); resuming "
                          "it unverified.", stacklevel=2)
        elif (actual := sha256_file(path)) != _first_word(digest):
            if pending.is_file() and _first_word(pending) == actual:
                # killed between installing the file and its digest: finish the install
                os.replace(pending, digest)
            else:
                raise CompanionError(f"{path} does not match the SHA-256 recorded when it was written: the "
                                     "file changed on disk, and resuming it would continue a different run. "
                                     "Start the run again with --overwrite.")
    try:
        ck = torch.load(path, map_location=device, weights_only=True)
    except Exception as err:  # noqa: BLE001 - any failure here is a bad file
        raise CompanionError(
            f"{path} is not a checkpoint this package wrote (it cannot be read with "
            f"weights_only=True: {str(err).splitlines()[0][:160]}); it is never unpickled. "
            "Delete it and start the run again.") from err
    missing = [k for k in ("model", "optimizer", "config", "step") if not isinstance(ck, dict) or k not in ck]
    if missing:
        raise CompanionError(f"{path} holds {type(ck).__name__ if not isinstance(ck, dict) else 'a dict'} without "
                             f"{', '.join(missing)}: not a checkpoint this package wrote. Start the run again "
                             "with --overwrite.")
    return ck


def _with_defaults(saved: dict) -> dict:
    """A saved configuration with the fields added since it was written set to their
    defaults, so a checkpoint stays resumable when TrainConfig grows a field."""
    from dataclasses import fields

    out = dict(saved)
    for f in fields(TrainConfig):
        if f.name not in out:
            out[f.name] = f.default if f.default is not MISSING else f.default_factory()
    return out


def _save_checkpoint(state: dict, tmp: Path, final: Path) -> None:
    """``torch.save(state, tmp)``; a full disk (which torch reports as a RuntimeError) is one
    clear :class:`CompanionError`."""
    try:
        torch.save(state, tmp)
    except RuntimeError as err:
        raise CompanionError(
            f"cannot write the checkpoint {final} ({(str(err).splitlines() or [''])[0][:120]}): the disk is "
            "full or the folder is not writable; free some space and continue with --resume (the previous "
            "checkpoint, if any, is unchanged).") from None


def _data_identity(data: TokenData) -> dict:
    """What a checkpoint records of its data, so that resuming on changed text is refused:
    the corpus's and the tokenizer's content hashes and the block counts."""
    src = getattr(data, "source", None) or {}
    return {"documents_sha256": src.get("documents_sha256"), "tokenizer_sha256": src.get("tokenizer_sha256"),
            "train_blocks": int(data.train.shape[0]), "eval_blocks": int(data.eval.shape[0]),
            "vocab_size": int(data.vocab_size)}


def _config_diff(saved: dict, now: dict) -> str:
    keys = sorted(set(saved) | set(now))
    diff = [f"{k}: {saved.get(k)!r} -> {now.get(k)!r}" for k in keys if saved.get(k) != now.get(k)]
    return "; ".join(diff)


def train(cfg: TrainConfig, data: TokenData | None = None, out_dir: str | Path | None = None,
          resume: bool = False, stop_at: int | None = None, progress=None,
          return_model: bool = False):
    """Train one configuration; return (and, with ``out_dir``, write) the history table.

    ``stop_at`` ends the run early at that step (after writing a checkpoint when
    ``out_dir`` is given): the learning-rate schedule still follows ``cfg.steps``, so a
    later ``resume=True`` call continues the same run.  ``progress`` is called with a short
    line after each evaluation.  With ``return_model`` the result is ``(history, model)``.

    The run is a sequence of named steps over one state object (:class:`_Run`): set-up,
    resume, then per step accumulate, update, evaluate and checkpoint.
    """
    # set-up: process group and device, data, model (seeded), optimiser, schedule, generators
    world, rank, device = _set_up_device(cfg)
    data = _set_up_data(cfg, data, world)
    run = _set_up(cfg, data, device, world, rank)
    out = Path(out_dir) if out_dir is not None else None
    ckpt_path = out / "checkpoint.pt" if out is not None else None

    # resume: refuse a checkpoint of other data, configuration or process count; restore its state
    if resume:
        _resume(run, ckpt_path)
    run.start_clock()

    # evaluate the starting point of a new run (a resumed run's history already holds it)
    if run.start == 0:
        _evaluate(run, 0, progress)
    end = cfg.steps if stop_at is None else min(stop_at, cfg.steps)
    run.model.train()
    for step in range(run.start, end):
        done = step + 1
        # accumulate: the step's micro-batches, gradients summed over them (and the ranks)
        total = _accumulate(run, step)
        # update: clip, optimiser and schedule step, the update's structure, the losses to log
        _update(run, step, total)
        # evaluate: held-out loss, structure scores, memorisation guard
        if done % cfg.eval_every == 0 or done == cfg.steps:
            _evaluate(run, done, progress)
        # checkpoint: kept weights, then model, optimiser, schedule, generators and history
        if out is not None and done in cfg.keep_weights and rank == 0:
            keep_weights(run.model, kept_weights_path(out, done))
        if out is not None and ((cfg.checkpoint_every and done % cfg.checkpoint_every == 0) or done == end):
            _checkpoint(run, ckpt_path, done)

    history = _history(run)
    return (history, run.model) if return_model else history


@dataclass
class _Run:
    """One run's state while it trains: what the steps of :func:`train` read and change.

    ``model`` is the bare model; ``net`` the :class:`SelectiveLM` around it (wrapped in
    ``DistributedDataParallel`` with several ranks) and ``fwd`` the forward the losses call
    (``net``, compiled with ``cfg.compile``).  ``rows`` is the history so far; ``pending``
    the logged losses still on the device (:func:`_flush` moves them into ``rows``).
    ``seen`` marks the training blocks drawn so far (the guard's seen and unseen samples).
    """

    cfg: TrainConfig
    data: TokenData
    device: torch.device
    world: int
    rank: int
    model: torch.nn.Module
    net: torch.nn.Module
    fwd: torch.nn.Module
    opt: torch.optim.Optimizer
    sched: torch.optim.lr_scheduler.LambdaLR
    gens: dict
    recorder: UpdateRecorder | None
    seen: torch.Tensor
    rows: list = field(default_factory=list)
    pending: list = field(default_factory=list)   # (step, quantity, loss on the device)
    start: int = 0
    # time spent by earlier segments of a resumed run (checkpoints from before this field: 0)
    before: dict = field(default_factory=lambda: {"wall": 0.0, "cpu": 0.0})
    # when the run's first segment started (UTC): what 'judged blind' compares with its rule's commit
    started: str | None = None
    # each segment's machine, from the step it started at (companion.base.runtime.describe_machine)
    sittings: list = field(default_factory=list)
    t0: float = 0.0
    c0: float = 0.0

    def start_clock(self) -> None:
        """Start this segment's clocks (wall and CPU); date a new run's start; record the
        machine this segment runs on."""
        from ...base.runtime import describe_machine

        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.started = self.started or now
        self.sittings = [*self.sittings, {"from_step": int(self.start), "started": now,
                                          **describe_machine(self.device)}]
        self.t0, self.c0 = time.time(), time.process_time()

    def elapsed(self) -> dict:
        """Wall and CPU seconds of the run so far, earlier segments included."""
        return {"wall": self.before["wall"] + time.time() - self.t0,
                "cpu": self.before["cpu"] + time.process_time() - self.c0}


def _set_up_device(cfg: TrainConfig) -> tuple[int, int, torch.device]:
    """``(world, rank, device)``: join the process group under torchrun; CPU runs are
    deterministic, CUDA runs allow TF32 matmuls."""
    world, rank, ddp_device = _distributed()
    if ddp_device is not None:
        device = ddp_device
    elif cfg.device:
        device = torch.device(cfg.device)
    else:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cpu":
        torch.use_deterministic_algorithms(True, warn_only=True)
    else:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    return world, rank, device


def _set_up_data(cfg: TrainConfig, data: TokenData | None, world: int) -> TokenData:
    """The run's blocks (read from ``cfg.corpus`` when not given), refused when their length
    is not the model's or they hold less than one global batch."""
    size = cfg.model_size
    if data is None:
        data = token_data_for_corpus(cfg.corpus, size.seq_len, top_k=cfg.top_k)
    if data.train.shape[1] != size.seq_len:
        raise ValueError(f"data blocks have length {data.train.shape[1]}, the model expects {size.seq_len}.")
    if data.train.shape[0] < cfg.batch_size * world:
        raise CompanionError(
            f"the corpus gives {data.train.shape[0]} training blocks of {size.seq_len} tokens, fewer than one "
            f"batch of {cfg.batch_size * world}; use a smaller --batch-size or --seq-len, or a larger corpus.")
    return data


def _build_model(cfg: TrainConfig, data: TokenData, device):
    """The model on ``device``: a checkpoint's (``init_from``, the objective swap) or a new one
    initialised by ``cfg.init``; the global generator (dropout) is seeded with ``cfg.seed`` first."""
    size = cfg.model_size
    torch.manual_seed(cfg.seed)
    if cfg.init_from is not None:  # the objective swap: a trained model under either objective
        from ..models.pretrained import load_pretrained

        model = load_pretrained(cfg.init_from, cfg.mode, seed=cfg.seed, attn_implementation="sdpa")
        if model.config.vocab_size != data.vocab_size:
            raise CompanionError(
                f"the data's vocabulary has {data.vocab_size} ids, {cfg.init_from}'s {model.config.vocab_size}: "
                "train on the checkpoint's own tokenizer and full vocabulary (--tokenizer, --top-k 0).")
        if cfg.eval_other and _mask_switch(model) is None:
            raise CompanionError(f"--eval-other needs a model whose attention mask is a switch (a LLaMA such as "
                                 f"smollm2-135m); {cfg.init_from} trains as a BERT class with its mask fixed.")
        if size.seq_len > model.config.max_position_embeddings:
            raise CompanionError(f"--seq-len {size.seq_len} is longer than {cfg.init_from}'s "
                                 f"{model.config.max_position_embeddings} positions.")
    else:
        model = build_model(size, data.vocab_size, cfg.mode)
        initialize(model, cfg.init, generator=torch.Generator().manual_seed(cfg.seed))
    model.to(device)
    return model


def _set_up(cfg: TrainConfig, data: TokenData, device, world: int = 1, rank: int = 0) -> _Run:
    """Model, optimiser (decay on matrices only), warm-up + linear-decay schedule, update
    recorder and the run's own generators: the training blocks' order (``seed + 1``) and
    the masking (``seed + 2``, each rank its own)."""
    model = _build_model(cfg, data, device)
    net = SelectiveLM(model)
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel as DDP

        net = DDP(net, device_ids=[device.index] if device.type == "cuda" else None)
    fwd = torch.compile(net) if cfg.compile else net
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = make_optimizer(cfg.optimizer, decay, no_decay, cfg.lr, cfg.weight_decay, fused=device.type == "cuda")
    if cfg.update_every is not None and world > 1:
        raise CompanionError("update logging (--log-updates) runs in one process; start the run without "
                             "torchrun, or without --log-updates.")
    recorder = UpdateRecorder(model, cfg.update_every) if cfg.update_every is not None else None
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, cfg.warmup, cfg.schedule_total))
    gens = {"data": torch.Generator().manual_seed(cfg.seed + 1),
            # each rank masks its own blocks with its own draws (rank 0 = single-process run)
            "mask": torch.Generator().manual_seed(cfg.seed + 2 + 7919 * rank)}
    return _Run(cfg=cfg, data=data, device=device, world=world, rank=rank, model=model, net=net, fwd=fwd,
                opt=opt, sched=sched, gens=gens, recorder=recorder,
                seen=torch.zeros(data.train.shape[0], dtype=torch.bool))


def _resume(run: _Run, ckpt_path: Path | None) -> dict:
    """Continue from the checkpoint at ``ckpt_path``: refused when it is missing, was
    trained on other data, by another configuration or by another number of processes;
    otherwise model, optimiser, schedule, every generator, history, step, the update
    recorder's start, the guard's seen blocks and the earlier segments' time are restored."""
    cfg, data, world = run.cfg, run.data, run.world
    if ckpt_path is None or not ckpt_path.exists():
        raise FileNotFoundError(f"no checkpoint to resume from at {ckpt_path}; run without resume first.")
    out = ckpt_path.parent
    ck = load_checkpoint(ckpt_path, run.device)
    saved_data = ck.get("data")
    if saved_data is not None and saved_data != _data_identity(data):
        diff = "; ".join(f"{k}: {str(saved_data.get(k))[:16]} -> {str(v)[:16]}"
                         for k, v in _data_identity(data).items() if saved_data.get(k) != v)
        raise CompanionError(
            f"the checkpoint in {out} was trained on other data than this run reads ({diff}): the "
            "corpus or tokenizer changed since. Resume with the same corpus, or start again with "
            "--overwrite.")
    if _with_defaults(ck["config"]) != cfg.to_dict():
        raise CompanionError(
            f"the checkpoint in {out} was written by a different configuration "
            f"({_config_diff(_with_defaults(ck['config']), cfg.to_dict())}); resume with the same settings "
            "or start a new run directory.")
    states = ck["rng"]
    if len(states) != world:
        raise CompanionError(
            f"the checkpoint in {out} was written by {len(states)} process(es), this run "
            f"has {world}; resume with the same number of processes.")
    run.model.load_state_dict(ck["model"])
    run.opt.load_state_dict(ck["optimizer"])
    run.sched.load_state_dict(ck["scheduler"])
    _set_rng_state(run.gens, states[run.rank])
    run.rows = ck["history"]
    run.start = ck["step"]
    if run.recorder is not None:  # the accumulated change keeps counting from the true start
        run.recorder.initial = ck["update_initial"]
    run.before = dict(ck.get("elapsed", {"wall": 0.0, "cpu": 0.0}))
    run.started = ck.get("started")
    # a checkpoint from before machines were recorded: its steps' machine is unknown
    run.sittings = list(ck.get("sittings") or [{"from_step": 0, "started": run.started, "device": "not recorded",
                                                 "cpu_model": "not recorded", "cpu_bf16_features": []}])
    if cfg.guard:
        run.seen = ck["seen"].to(torch.bool).cpu()
    return ck


def _accumulate(run: _Run, step: int) -> torch.Tensor:
    """Forward and backward passes over the step's ``grad_accum`` micro-batches; returns the
    step's mean training loss (on the device).  Each micro-batch draws one global batch of
    block indices (every rank the same draw, marked seen) and trains on this rank's slice;
    the gradient all-reduce runs on the last micro-batch only.  The symmetry penalty is
    added in float32, outside autocast."""
    cfg, model = run.cfg, run.model
    total = torch.zeros((), device=run.device)
    n_train = run.data.train.shape[0]
    for micro in range(cfg.grad_accum):
        idx = torch.randint(0, n_train, (cfg.batch_size * run.world,), generator=run.gens["data"])
        run.seen[idx] = True   # every rank's blocks of the global batch
        idx = idx[run.rank * cfg.batch_size:(run.rank + 1) * cfg.batch_size]
        ids = run.data.train[idx]  # on the CPU: the masking is drawn there
        sync_ctx = run.net.no_sync() if (run.world > 1 and micro < cfg.grad_accum - 1) else contextlib.nullcontext()
        with sync_ctx:
            with _autocast(cfg, run.device):
                loss, _ = objective_loss(run.fwd, ids, cfg.mode, run.data.masking, run.gens["mask"])
            obj = loss / cfg.grad_accum
            if cfg.penalty != "none" and cfg.penalty_coef > 0:  # in float32, outside autocast
                pen = symmetry_penalty(model, cfg.penalty)
                obj = obj + cfg.penalty_coef * pen / cfg.grad_accum
            obj.backward()
        total = total + loss.detach() / cfg.grad_accum
    return total


def _update(run: _Run, step: int, total: torch.Tensor) -> None:
    """The optimiser step of 0-based ``step`` (logged at ``step + 1``): the update recorder
    reads the raw gradients, the gradients are clipped to ``max_grad_norm``, the learning
    rate the step uses is logged, optimiser and schedule step, the recorder measures the
    applied update; the training loss (and the penalty) wait on the device in ``pending``."""
    cfg, model = run.cfg, run.model
    if run.recorder is not None:
        run.recorder.before_step(model, step)
    if cfg.max_grad_norm:
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
    run.rows.append(dict(step=step + 1, quantity="lr", layer=-1, head=-1, value=run.sched.get_last_lr()[0]))
    run.opt.step()
    run.sched.step()
    if run.recorder is not None:
        run.rows.extend(run.recorder.after_step(model, step))
    run.opt.zero_grad(set_to_none=True)
    run.pending.append((step + 1, "train_loss", total))
    if cfg.penalty != "none":
        with torch.no_grad():
            run.pending.append((step + 1, "penalty", symmetry_penalty(model, cfg.penalty).detach()))


def _flush(run: _Run) -> None:
    """Copy the pending losses to the host and into the history (with several ranks a
    collective, the global batch's loss the mean of the ranks': every rank flushes at the
    same steps); a training loss that is not finite stops the run as diverged."""
    if not run.pending:
        return
    values = torch.stack([v.float() for _, _, v in run.pending])
    if run.world > 1:  # the global batch's loss: the mean of the ranks' losses
        import torch.distributed as dist

        dist.all_reduce(values, op=dist.ReduceOp.SUM)
        values = values / run.world
    values = values.cpu().tolist()
    for (st, q, _), val in zip(run.pending, values):
        if q == "train_loss" and not math.isfinite(val):
            raise CompanionError(
                f"training diverged: the training loss is {val} at step {st} (learning rate "
                f"{run.cfg.lr:g}, {run.cfg.optimizer}); lower --lr or raise --warmup. Nothing of this "
                "run was written after its last checkpoint.")
    run.rows.extend(dict(step=st, quantity=q, layer=-1, head=-1, value=val)
                    for (st, q, _), val in zip(run.pending, values))
    run.pending.clear()


def _evaluate(run: _Run, step: int, progress=None) -> None:
    """Log ``step``'s held-out loss and its standard error, the one-mode memorisation guard
    (``cfg.guard``: seen, unseen and held-out blocks' losses, the seen share), the other
    objective's loss (``cfg.eval_other``) and the query-key forms' structure scores."""
    _flush(run)
    cfg, data, device, fwd, rows = run.cfg, run.data, run.device, run.fwd, run.rows
    el, se, _ = eval_loss(fwd, data, cfg, device)
    rows.append(dict(step=step, quantity="eval_loss", layer=-1, head=-1, value=el))
    rows.append(dict(step=step, quantity="eval_loss_se", layer=-1, head=-1, value=se))
    if cfg.guard:   # one mode, one mask draw, one block count: text seen against text not seen
        samples = guard_samples(data, cfg, run.seen)
        for name, blocks in samples.items():
            gl, gse, _ = eval_loss(fwd, data, cfg, device, blocks=blocks)
            rows.append(dict(step=step, quantity=f"guard_{name}_loss", layer=-1, head=-1, value=gl))
            rows.append(dict(step=step, quantity=f"guard_{name}_loss_se", layer=-1, head=-1, value=gse))
            rows.append(dict(step=step, quantity=f"guard_{name}_blocks", layer=-1, head=-1,
                             value=float(blocks.shape[0])))
        rows.append(dict(step=step, quantity="guard_seen_share", layer=-1, head=-1,
                         value=float(run.seen.float().mean())))
    if cfg.eval_other:
        el2, se2, _ = eval_loss(fwd, data, cfg, device, mode=OTHER_OBJECTIVE[cfg.mode])
        rows.append(dict(step=step, quantity="eval_loss_other", layer=-1, head=-1, value=el2))
        rows.append(dict(step=step, quantity="eval_loss_other_se", layer=-1, head=-1, value=se2))
    rows.extend(structure_rows(run.model, step))
    if progress is not None and run.rank == 0:
        sym = np.median([r["value"] for r in rows if r["step"] == step and r["quantity"] == "symmetry"
                         and r["head"] == -1])
        progress(f"step {step}/{cfg.steps} eval_loss {el:.4f} median_symmetry {sym:.3f} "
                 f"elapsed {time.time() - run.t0:.0f}s")


def _checkpoint(run: _Run, ckpt_path: Path, done: int) -> None:
    """Write the checkpoint after ``done`` steps (rank 0; every rank hands over its
    generators): model, optimiser, schedule, generators, history, configuration, the data's
    identity, the update recorder's start, the guard's seen blocks and the time so far.
    Written beside ``ckpt_path``, then installed with its digest (:func:`_install_checkpoint`)."""
    _flush(run)
    states = _all_rng_states(run.gens, run.world)  # a collective: every rank takes part
    if run.rank != 0:
        return
    cfg = run.cfg
    from ...base.outputs import temp_beside

    ckpt_path.parent.mkdir(parents=True, exist_ok=True)
    with temp_beside(ckpt_path, "checkpoint") as tmp:   # new (O_EXCL): nothing at its name is followed
        _save_checkpoint({"model": run.model.state_dict(), "optimizer": run.opt.state_dict(),
                          "scheduler": run.sched.state_dict(), "rng": states, "history": run.rows,
                          "step": done, "config": cfg.to_dict(), "data": _data_identity(run.data),
                          "update_initial": run.recorder.initial if run.recorder is not None else None,
                          "started": run.started, "seen": run.seen if cfg.guard else None,
                          "elapsed": run.elapsed(), "sittings": run.sittings},
                         tmp, ckpt_path)
        _install_checkpoint(tmp, ckpt_path)


def _history(run: _Run) -> pd.DataFrame:
    """The run's history table (the last losses flushed), in step order, with the earlier
    segments' time and the run's start date in ``attrs``; with several ranks, a barrier."""
    _flush(run)
    history = pd.DataFrame(run.rows, columns=["step", "quantity", "layer", "head", "value"])
    # losses reach the table at the next flush: restore step order (stable within a step)
    history = history.sort_values("step", kind="stable", ignore_index=True)
    history.attrs["elapsed_before"] = run.before  # what the run's earlier segments took
    history.attrs["started"] = run.started
    history.attrs["sittings"] = run.sittings
    if run.world > 1:
        import torch.distributed as dist

        dist.barrier()
    return history


def kept_weights_path(out_dir, step: int) -> Path:
    """Where a run keeps its model weights at ``step`` (``TrainConfig.keep_weights``)."""
    return Path(out_dir) / f"weights-step{int(step)}.safetensors"


def keep_weights(model, path: Path) -> Path:
    """Write the model's weights (float32 safetensors) atomically, with a SHA-256 beside it,
    so a later measurement (e.g. a guard in another mode) never needs the run again."""
    from safetensors.torch import save_file

    from ...base.cache import atomic_path

    from ...base.outputs import check_output, write_text_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    check_output(f"{path}.sha256", "kept weights' digest")   # refused before the weights are written
    state = {k: v.detach().float().cpu().clone().contiguous() for k, v in model.state_dict().items()}
    with atomic_path(path) as tmp:
        save_file(state, str(tmp))
    write_text_atomic(sha256_file(path) + "\n", f"{path}.sha256", what="kept weights' digest")
    return path


def provenance(cfg: TrainConfig, command: str, seconds: float, data: TokenData | None = None) -> dict:
    """What made a run: command, hardware, duration, versions, date, seed and configuration."""
    import transformers

    from ... import __version__
    from ...base.runtime import describe_device

    dev = torch.device(cfg.device) if cfg.device else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return {
        "command": command,
        "hardware": {"device": describe_device(dev), "machine": platform.machine(),
                     "processor": platform.processor() or platform.machine(),
                     "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads()},
        "duration_s": round(seconds, 1),
        "versions": {"companion": __version__, "torch": torch.__version__,
                     "transformers": transformers.__version__, "python": platform.python_version()},
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seed": cfg.seed,
        "config": cfg.to_dict(),
        "model_size": cfg.model_size.to_dict(),
        "data": data.summary() if data is not None else None,
    }


def write_run(out_dir: str | Path, history: pd.DataFrame, meta: dict) -> Path:
    """Write ``provenance.json`` and then ``history.csv`` into ``out_dir``, each atomically.

    ``history.csv`` is what marks a run as finished (:func:`read_run`,
    :func:`companion.train.runner.runs.load_runs`), so it is renamed into place last: an
    interrupted run never leaves a folder that reads as a finished one.
    """
    from ...base.cache import atomic_path

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(out / "provenance.json") as tmp:
        tmp.write_text(json.dumps(meta, indent=2, default=str) + "\n")
    with atomic_path(out / "history.csv") as tmp:
        history.to_csv(tmp, index=False, float_format="%.6g")
    return out


def read_run(run_dir: str | Path) -> tuple[pd.DataFrame, dict]:
    """``(history, provenance)`` of a run written by :func:`write_run`."""
    run = Path(run_dir)
    if not (run / "history.csv").exists():
        raise FileNotFoundError(f"{run} holds no history.csv; is it a run directory?")
    try:
        provenance = json.loads((run / "provenance.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CompanionError(f"run {run.name} has a history but no provenance.json, so its settings (corpus, "
                             "learning rate, device) cannot be checked; copy the provenance from its work "
                             f"folder, or move {run} away.") from None
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise CompanionError(f"run {run.name}: its provenance.json cannot be read ({str(err).splitlines()[0][:120]}); "
                             f"copy it again from the run's work folder, or move {run} away.") from None
    if not isinstance(provenance, dict) or not isinstance(provenance.get("config"), dict):
        raise CompanionError(f"run {run.name}: its provenance.json holds no config object, so it was not written "
                             f"by `companion train`; make the run again, or move {run} away.")
    return _read_history(run), provenance


#: the columns of a run's history.csv, as :func:`write_run` writes them
HISTORY_COLUMNS = ("step", "quantity", "layer", "head", "value")


def _read_history(run: Path) -> pd.DataFrame:
    """A run's ``history.csv``, refused in one line naming the run when it is not a table of
    the five columns with whole steps and numeric values (a hand edit, a cut-off copy)."""
    import csv

    try:
        hist = pd.read_csv(run / "history.csv")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, csv.Error, ValueError) as err:
        raise CompanionError(f"run {run.name}: its history.csv is not a table this package wrote "
                             f"({str(err).strip().splitlines()[0][:100]}); copy it again from the run's work folder, "
                             f"or move {run} away.") from None
    missing = [c for c in HISTORY_COLUMNS if c not in hist.columns]
    if missing:
        raise CompanionError(f"run {run.name}: its history.csv lacks the columns {missing}; copy it again from the "
                             f"run's work folder, or move {run} away.")
    for col in ("step", "layer", "head", "value"):
        if not pd.api.types.is_numeric_dtype(hist[col]):
            bad = hist.index[pd.to_numeric(hist[col], errors="coerce").isna() & hist[col].notna()]
            line = int(bad[0]) + 2 if len(bad) else "?"
            raise CompanionError(f"run {run.name}: its history.csv has a {col} that is not a number (line {line}); "
                                 f"copy it again from the run's work folder, or move {run} away.")
    return hist

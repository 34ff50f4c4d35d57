"""What defines a training run: :class:`TrainConfig`, checked when it is made, and the
learning-rate schedule it names (warm-up, then linear decay).

A checkpoint stores ``TrainConfig.to_dict()``; resuming compares it field by field
(:mod:`companion.train.runner.checkpoints`), so a field added here needs a default.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from dataclasses import asdict, dataclass, field

from ..models.bert import get_size
from ..models.init import PENALTIES

__all__ = ["TrainConfig", "lr_factor", "OTHER_OBJECTIVE", "MAX_SEED", "memory_floor_bytes", "check_fits_memory"]

#: the largest seed: the run's generators are seeded with ``seed``, ``seed + 1``, ``seed + 2``
#: and ``seed + 2 + 7919 * rank``, which torch takes as 64-bit integers (a negative seed it
#: wraps round: -1 would be 2**64 - 1, which it refuses); 0..2**32 - 1 keeps all of them apart
MAX_SEED = 2 ** 32 - 1

#: each objective's other one, for the held-out loss of the objective swap (``eval_other``)
OTHER_OBJECTIVE = {"encoder": "decoder", "decoder": "encoder"}


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
    max_grad_norm: float = 1.0      # the gradients' clipping norm; 0: no clipping
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
        for name in ("bf16", "cpu_bf16", "compile", "eval_other", "guard"):   # the text 'no' was read as True
            v = getattr(self, name)
            if not isinstance(v, (bool, np.bool_)):
                raise ValueError(f"{name} is a switch: give True or False, not {v!r} (any text, even 'no' or "
                                 "'false', would turn it on).")
            setattr(self, name, bool(v))
        if isinstance(self.seed, bool) or not isinstance(self.seed, numbers.Integral) or not 0 <= self.seed <= MAX_SEED:
            raise ValueError(f"seed (--seed) must be a whole number in [0, {MAX_SEED}]; got {self.seed!r} (torch "
                             "wraps a negative seed round to a huge one and overflows past 2**63).")
        self.seed = int(self.seed)
        self._check_device()
        if self.top_k is not None and (isinstance(self.top_k, bool) or not isinstance(self.top_k, numbers.Integral)
                                       or self.top_k < 1):   # True read as one kept id, -5 refused late
            raise ValueError(f"top_k (--top-k) must be a whole number of ids >= 1, or None for the full vocabulary "
                             f"(--top-k 0); got {self.top_k!r}.")
        if self.top_k is not None:
            self.top_k = int(self.top_k)
        if self.init_from is not None:
            self._from_checkpoint()
        if self.eval_other and (self.init_from is None or self.mode not in OTHER_OBJECTIVE):
            raise ValueError("eval_other compares the two objectives of a checkpoint's swap: it needs init_from "
                             f"and mode encoder or decoder (got init_from={self.init_from!r}, mode={self.mode!r}).")
        if self.penalty not in PENALTIES:
            raise ValueError(f"unknown penalty {self.penalty!r}; choose one of {PENALTIES}.")
        for name in ("steps", "batch_size", "grad_accum", "eval_every", "warmup", "checkpoint_every"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise ValueError(f"{name} must be a whole number; got {v!r}.")
            setattr(self, name, int(v))
        for name in ("decay_steps", "eval_blocks", "layers", "width", "heads", "seq_len"):  # optional counts
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Integral)):
                raise ValueError(f"{name} must be a whole number (or None); got {v!r}.")
            setattr(self, name, None if v is None else int(v))
        for name in ("lr", "weight_decay", "penalty_coef", "max_grad_norm"):
            v = getattr(self, name)
            if isinstance(v, (bool, str)) or not isinstance(v, numbers.Real):  # True read as lr 1.0
                raise ValueError(f"{name} must be a number; got {v!r}.")
            setattr(self, name, float(v))
        if self.penalty == "none" and self.penalty_coef > 0:
            raise ValueError(f"penalty_coef {self.penalty_coef:g} has no effect with penalty 'none'; name the "
                             "penalty (--penalty symmetric or skew) or leave the coefficient at 0.")
        for name in ("steps", "batch_size", "grad_accum", "eval_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1; got {getattr(self, name)}.")
        if self.checkpoint_every < 0:
            raise ValueError(f"checkpoint_every must be >= 0 (0: no checkpoints but the last); got "
                             f"{self.checkpoint_every} (a negative one checkpointed every |n| steps).")
        if self.warmup < 0 or self.warmup > self.steps:
            raise ValueError(f"warmup must lie in [0, steps={self.steps}]; got {self.warmup} (a horizon shorter "
                             "than the warm-up never reaches the peak learning rate).")

        from .updates import OPTIMIZERS

        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {self.optimizer!r}; choose one of {OPTIMIZERS}.")
        if self.update_every is not None and (isinstance(self.update_every, bool) or
                                              not isinstance(self.update_every, numbers.Integral) or self.update_every < 1):
            raise ValueError(f"update_every must be a whole number of steps >= 1 (or None to log no updates); "
                             f"got {self.update_every!r}.")
        if self.update_every is not None:
            self.update_every = int(self.update_every)   # a NumPy integer (read from a table) is that number
        if self.decay_steps is not None and self.decay_steps < max(self.warmup, 1):
            raise ValueError(f"decay_steps must be >= warmup ({self.warmup}) and >= 1; got {self.decay_steps} "
                             "(it is the step at which the learning rate reaches 0).")
        if self.decay_steps is not None and self.decay_steps < self.steps:
            raise ValueError(f"decay_steps {self.decay_steps} is shorter than the run (steps {self.steps}): its last "
                             f"{self.steps - self.decay_steps} steps would run at learning rate 0 and change nothing; "
                             "pass --decay-steps >= --steps, or fewer --steps.")
        if self.eval_blocks is not None and self.eval_blocks < 1:
            raise ValueError(f"eval_blocks must be >= 1, or None for the whole held-out split; "
                             f"got {self.eval_blocks} (0 blocks would record a loss of 0).")
        kept = self.keep_weights or ()
        if isinstance(kept, (str, bytes, numbers.Number)) or not hasattr(kept, "__iter__"):   # tuple(5): a TypeError
            raise ValueError(f"keep_weights lists steps of this run (a tuple of whole numbers in 1..{self.steps}); "
                             f"got {kept!r}.")
        self.keep_weights = tuple(kept)
        bad = [k for k in self.keep_weights
               if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 0 < k <= self.steps]
        if bad:
            raise ValueError(f"keep_weights lists steps of this run (whole numbers in 1..{self.steps}); got {bad[0]!r}.")
        self.keep_weights = tuple(int(k) for k in self.keep_weights)
        for name in ("layers", "width", "heads", "seq_len"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise ValueError(f"{name} must be >= 1 when given; got {v}.")
        if self.seq_len == 1:   # every objective predicts one position from another
            raise ValueError("seq_len (--seq-len) 1 is too short: the objectives need blocks of at least 2 "
                             "positions; give --seq-len 2 or more.")
        shape = self.model_size
        if shape.hidden_size % shape.num_attention_heads:
            raise ValueError(f"width {shape.hidden_size} is not divisible by {shape.num_attention_heads} heads.")
        for name in ("lr", "weight_decay", "penalty_coef", "max_grad_norm"):
            v = getattr(self, name)
            if not math.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite number >= 0; got {v!r}.")

    def _check_device(self):
        """``device`` names a device torch can parse, of a type training runs on (cpu, cuda)."""
        if self.device is None:
            return
        import torch

        try:
            dev = torch.device(self.device)
        except (RuntimeError, ValueError, TypeError):
            raise ValueError(f"device {self.device!r} is not a device; use cpu, cuda or cuda:N.") from None
        if dev.type not in ("cpu", "cuda"):
            raise ValueError(f"device {self.device!r}: training runs on cpu or cuda, not {dev.type}.")

    def _from_checkpoint(self):
        """Starting from a checkpoint: its own vocabulary and weights, its shape."""
        from pathlib import Path

        from ...zoo.registry import is_zoo_name
        from ..models.pretrained import checkpoint_shape

        src = str(self.init_from)
        if not src.strip():
            raise ValueError("init_from (--from) is empty (an unset variable?); give a zoo name such as "
                             "all-minilm-l6-v2, a checkpoint folder, a GGUF file or a hub id (org/name).")
        local = src.startswith(("/", ".", "~")) or src.count("/") > 1 or src.lower().endswith(".gguf")
        if local and not is_zoo_name(src) and not Path(src).exists():   # it read as a hub id of bad form
            raise ValueError(f"init_from (--from) {src}: no such folder or file; give a checkpoint folder or GGUF "
                             "file that exists, a zoo name such as all-minilm-l6-v2, or a hub id (org/name).")

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


def memory_floor_bytes(cfg: TrainConfig, vocab_size: int) -> int:
    """A lower bound on the memory one training step takes: float32 weights and gradients of
    ``L (12 w^2 + 13 w) + (V + P) w`` parameters (BERT's layers, token and position
    embeddings), and four float32 values per token, layer and width unit of the micro-batch
    (hidden states, queries, keys, values).  The optimiser's state and everything else come
    on top, so a run above it cannot fit."""
    s = cfg.model_size
    w, layers, positions = s.hidden_size, s.num_hidden_layers, s.max_position_embeddings
    params = layers * (12 * w * w + 13 * w) + (int(vocab_size) + positions) * w
    activations = cfg.batch_size * s.seq_len * layers * w * 4
    return 8 * params + 4 * activations


def _machine_memory(device) -> tuple[int, str]:
    """Total memory of ``device`` (a CUDA card's, else this machine's RAM) and its name."""
    import os

    import torch

    dev = torch.device(device) if device is not None else torch.device(
        "cuda" if torch.cuda.is_available() else "cpu")
    if dev.type == "cuda" and torch.cuda.is_available():
        return int(torch.cuda.get_device_properties(dev.index or 0).total_memory), "this GPU's"
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")), "this machine's"


def check_fits_memory(cfg: TrainConfig, vocab_size: int, device=None) -> None:
    """Refuse, before anything is allocated, a run whose :func:`memory_floor_bytes` is more
    than the device's whole memory (a million layers would otherwise fill the machine's
    memory until the kernel kills the process, a width of 2**20 ask for terabytes)."""
    from ...base.errors import CompanionError

    need = memory_floor_bytes(cfg, vocab_size)
    have, whose = _machine_memory(device if device is not None else cfg.device)
    if need > have:
        s = cfg.model_size
        raise CompanionError(
            f"this model needs at least {need / 2**30:,.0f} GiB of memory to train (--layers "
            f"{s.num_hidden_layers}, --width {s.hidden_size}, --seq-len {s.seq_len}, --batch-size {cfg.batch_size}, "
            f"{vocab_size} vocabulary ids), more than {whose} {have / 2**30:,.0f} GiB; choose a smaller --size, "
            "--layers, --width, --seq-len or --batch-size.")

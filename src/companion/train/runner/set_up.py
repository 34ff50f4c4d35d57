"""The set-up step of the training loop: the run's blocks, its model (new, or a checkpoint's
for the objective swap), optimiser, schedule and generators, gathered in one :class:`_Run`."""

from __future__ import annotations

import torch

from ...base.errors import CompanionError
from ..models.bert import build_model
from ..models.init import initialize
from ..models.objectives import SelectiveLM
from ..text.data import TokenData, token_data_for_corpus
from .config import TrainConfig, check_fits_memory, lr_factor
from .evaluation import _mask_switch
from .state import _Run
from .updates import UpdateRecorder, make_optimizer


def _set_up_data(cfg: TrainConfig, data: TokenData | None, world: int) -> TokenData:
    """The run's blocks (read from ``cfg.corpus`` when not given), refused when their length
    is not the model's or they hold less than one global batch."""
    size = cfg.model_size
    if data is None:
        data = token_data_for_corpus(cfg.corpus, size.seq_len, top_k=cfg.top_k)
    for split, blocks in (("training", data.train), ("held-out", data.eval)):
        if blocks.shape[1] != size.seq_len:
            raise CompanionError(f"the {split} blocks have length {blocks.shape[1]}, the model expects {size.seq_len} "
                                 "(its --seq-len); block both splits by it.")
    if data.eval.shape[0] < 1:
        raise CompanionError(f"the held-out split has 0 blocks of {size.seq_len} tokens, so the held-out loss would "
                             "average over nothing; use a larger corpus or a shorter --seq-len.")
    if data.train.shape[0] < cfg.batch_size * world:
        raise CompanionError(
            f"the corpus gives {data.train.shape[0]} training blocks of {size.seq_len} tokens, fewer than one "
            f"batch of {cfg.batch_size * world}; use a smaller --batch-size or --seq-len, or a larger corpus.")
    for split, blocks in (("training", data.train), ("held-out", data.eval)):
        _check_ids(split, blocks, data.vocab_size)
    spec = data.masking
    if spec.vocab_size != data.vocab_size:
        # larger: a random replacement beyond the embedding failed deep inside; smaller: the
        # replacements never drew the vocabulary's last ids, a corruption nobody named
        raise CompanionError(f"the masking draws replacements from {spec.vocab_size} ids, the data's vocabulary has "
                             f"{data.vocab_size}; make the MaskingSpec with vocab_size={data.vocab_size}.")
    return data


def _check_ids(split: str, blocks, vocab_size: int) -> None:
    """In-memory blocks (tensors) hold ids of the vocabulary only: an id outside it would be an
    index error deep in the embedding, or on a GPU a device assertion.  Blocks of a token
    stream (:class:`~companion.train.text.tokens.TokenBlocks`) come from the tokenizer or its
    compact lookup, whose ids are the vocabulary's by construction, and are not scanned."""
    if not isinstance(blocks, torch.Tensor) or blocks.numel() == 0:
        return
    lo, hi = int(blocks.min()), int(blocks.max())
    if lo < 0 or hi >= vocab_size:
        bad = lo if lo < 0 else hi
        raise CompanionError(f"the {split} blocks hold token id {bad}, outside the vocabulary of {vocab_size} ids "
                             f"(0..{vocab_size - 1}); map the tokens into the vocabulary, or give its true size.")


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
    check_fits_memory(cfg, data.vocab_size, device)   # before anything of the model is allocated
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

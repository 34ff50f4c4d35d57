"""The FLOPs bench/train_throughput.py charges each loop are the ones torch counts.

Its ``flop_ratio`` (the speed-up that evaluating the vocabulary head only at the masked
positions can buy) is computed from a formula; here the formula is compared with
``torch.utils.flop_counter`` on one forward and backward pass of each loop.
"""

import importlib.util
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from companion.train.models.bert import build_model, get_size
from companion.train.models.objectives import MaskingSpec, SelectiveLM, objective_loss

_spec = importlib.util.spec_from_file_location(
    "train_throughput", Path(__file__).resolve().parents[1] / "bench" / "train_throughput.py")
tt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tt)


@pytest.mark.parametrize("vocab", [500, 3000])
def test_executed_flops_match_torchs_count_for_both_loops(vocab):
    from transformers import BertForMaskedLM

    batch, seq = 8, 16
    torch.manual_seed(0)
    model = build_model(replace(get_size("micro"), seq_len=seq), vocab, "encoder")
    ids = torch.randint(5, vocab, (batch, seq))
    spec = MaskingSpec(mask_id=3, vocab_size=vocab, first_regular_id=5)
    with FlopCounterMode(display=False) as ours:
        loss, _ = objective_loss(SelectiveLM(model), ids, "encoder", spec, torch.Generator().manual_seed(0))
        loss.backward()
    with FlopCounterMode(display=False) as theirs:  # what the Trainer runs: the head everywhere
        BertForMaskedLM(model.config)(input_ids=ids, labels=ids).loss.backward()
    per_token = batch * seq
    assert ours.get_total_flops() / per_token == pytest.approx(
        tt.executed_flops_per_token(model.config, seq, batch, "selective"), rel=1e-9)
    assert theirs.get_total_flops() / per_token == pytest.approx(
        tt.executed_flops_per_token(model.config, seq, batch, "full"), rel=1e-9)

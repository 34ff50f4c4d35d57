"""FLOPs of one BERT-Mini training step (forward and backward, 16 x 128 tokens), counted.

The status page's T4 estimate of the two chapters that train live
(:mod:`companion.book.budgets.colab_budget`) multiplies the H100's measured seconds per step by the
T4/H100 ratio of 16-bit tensor peaks.  A T4 (Turing, compute capability 7.5) trains in
float32 here (:func:`companion.train.runner.devices.native_bf16`), so that estimate holds only if the
T4 sustains a certain share of its float32 peak; this script counts the step's FLOPs with
``torch.utils.flop_counter`` so that share can be computed rather than assumed::

    python bench/bert_mini_step_flops.py      # writes bench/results/bert_mini_step_flops.json
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

from companion.train.models.bert import build_model, get_size

OUT = Path(__file__).parent / "results" / "bert_mini_step_flops.json"


def count(mode: str, batch: int = 16, vocab: int = 4101) -> int:
    size = get_size("bert-mini")
    torch.manual_seed(0)
    model = build_model(size, vocab_size=vocab, mode=mode)
    ids = torch.randint(5, vocab, (batch, size.seq_len))
    with FlopCounterMode(display=False) as counter:
        out = model(input_ids=ids, labels=ids)
        out.loss.backward()
    return int(counter.get_total_flops())


def main() -> None:
    res = {"what": "FLOPs of one BERT-Mini training step (forward + backward; the optimiser's "
                   "elementwise work is not counted), batch 16 x 128 tokens, vocabulary 4,101 "
                   "(the chapters' top-4,096 tokenizer)",
           "counter": f"torch.utils.flop_counter.FlopCounterMode, torch {torch.__version__}",
           "flops_per_step": {m: count(m) for m in ("encoder", "decoder")}}
    OUT.write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# The GPU runs the chapters are waiting for (not yet made): BERT-Mini (Table S1), encoder and
# decoder, standard / symmetric / symmetric-torch-default initialisation, three seeds, full
# vocabulary, 128-token blocks, bf16 autocast.  One GPU: about a minute per 1,000 steps at
# this size.  Several GPUs: prefix the command with `torchrun --nproc_per_node N -m` instead
# of `python -m` (the batch below is then per GPU).
# Usage: CORPUS=wikipedia bash data/runs/make_gpu_runs.sh   (default: the offline corpus)
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD/src
CORPUS=${CORPUS:-default}
LOG=data/runs/progress-gpu.log
COMMON="--size bert-mini --steps 20000 --batch-size 32 --grad-accum 1 --lr 5e-4 --warmup 1000 \
  --eval-every 250 --eval-blocks 256 --top-k 0 --corpus $CORPUS --checkpoint-every 2000 --log $LOG"
for seed in 0 1 2; do
  for mode in encoder decoder; do
    for init in standard symmetric symmetric-torch-default; do
      name=gpu-bert-mini-$CORPUS-$mode-$init-s$seed
      [ -f data/runs/$name/history.csv ] && continue
      resume=""; [ -f data/runs/$name/checkpoint.pt ] && resume="--resume"
      python -m companion.train.cli $COMMON --mode $mode --init $init --seed $seed \
        --out data/runs/$name $resume
    done
  done
done

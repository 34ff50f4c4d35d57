#!/usr/bin/env bash
# The cached CPU runs behind the training chapters: size "cpu" (4 layers, width 128,
# 4 heads, 64-token blocks) on the default corpus, 400 AdamW steps of 16 blocks, lr 1e-3.
# Two runs at a time, one thread each.  Usage: bash data/runs/make_cpu_runs.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD/src HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
PY=${PY:-python}
LOG=data/runs/progress.log
COMMON="--size cpu --steps 400 --batch-size 16 --lr 1e-3 --warmup 40 --eval-every 20 --threads 1 --log $LOG"
run() { local name=$1; shift; [ -f data/runs/$name/history.csv ] && return 0
        nice -n 10 $PY -m companion.train.cli $COMMON "$@" --out data/runs/$name > /dev/null; }
jobs=(
  "cpu-encoder-standard-s0 --mode encoder --init standard --seed 0"
  "cpu-encoder-symmetric-s0 --mode encoder --init symmetric --seed 0"
  "cpu-decoder-standard-s0 --mode decoder --init standard --seed 0"
  "cpu-authors-decoder-standard-s0 --mode authors-decoder --init standard --seed 0"
  "cpu-encoder-standard-s1 --mode encoder --init standard --seed 1"
  "cpu-encoder-symmetric-s1 --mode encoder --init symmetric --seed 1"
  "cpu-encoder-standard-s2 --mode encoder --init standard --seed 2"
  "cpu-encoder-symmetric-s2 --mode encoder --init symmetric --seed 2"
  "cpu-encoder-symmetric-torch-default-s0 --mode encoder --init symmetric-torch-default --seed 0"
  "cpu-encoder-symmetric-torch-default-s1 --mode encoder --init symmetric-torch-default --seed 1"
  "cpu-encoder-symmetric-torch-default-s2 --mode encoder --init symmetric-torch-default --seed 2"
  "cpu-encoder-skew-s0 --mode encoder --init skew --seed 0"
  "cpu-encoder-penalty-symmetric-s0 --mode encoder --init standard --penalty symmetric --penalty-coef 1.0 --seed 0"
)
i=0
for job in "${jobs[@]}"; do
  run $job &
  i=$((i+1)); if (( i % 2 == 0 )); then wait; fi
done
wait
echo "all done $(date -u)" >> $LOG

#!/usr/bin/env bash
# The compute study (training chapter, "How much training does the structure need?"):
# short encoder and decoder runs on the Wikipedia corpus at one fixed token budget,
# varying one factor at a time around a base configuration, to find where the
# encoder-decoder symmetry gap leaves its null band soonest (companion.train.study).
#
# Base: 4 layers, width 128, 4 heads, 64-token blocks, batch 16, lr 1e-3, compact
# 4,096-id vocabulary.  Variants: width 64/256, depth 2/8, heads 2/8, lr 3e-4/3e-3,
# blocks of 32/128 tokens, vocabulary 1,024/16,384, batch 8/32.  Every run sees TOKENS
# tokens (default 1,500,000: the step count follows from batch x block length), warms up
# over the first 5% of steps, logs 15 evaluations of 128 held-out blocks, one thread.
#
# Resumable: runs checkpoint every 10% and `--resume` continues them; finished runs are
# skipped.  Usage: bash data/runs/make_compute_study.sh   (RUN_JOBS=2 runs at a time)
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD/src HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
PY=${PY:-python}
JOBS=${RUN_JOBS:-2}
TOKENS=${TOKENS:-1500000}
LOG=data/runs/progress.log
variants=(
  "base|"
  "width64|--width 64" "width256|--width 256"
  "depth2|--layers 2" "depth8|--layers 8"
  "heads2|--heads 2" "heads8|--heads 8"
  "lr3e-4|--lr 3e-4" "lr3e-3|--lr 3e-3"
  "seq32|--seq-len 32" "seq128|--seq-len 128"
  "vocab1k|--top-k 1024" "vocab16k|--top-k 16384"
  "batch8|--batch-size 8" "batch32|--batch-size 32"
)
run() {  # NAME MODE ARGS...
  local name=$1 mode=$2; shift 2
  [ -f data/runs/$name/history.csv ] && return 0
  local batch=16 seq=64 lr=1e-3 a=("$@")
  for ((i = 0; i < ${#a[@]}; i++)); do
    case ${a[i]} in --batch-size) batch=${a[i+1]};; --seq-len) seq=${a[i+1]};; --lr) lr=${a[i+1]};; esac
  done
  local steps=$(( TOKENS / (batch * seq) ))
  local every=$(( steps / 15 > 0 ? steps / 15 : 1 ))
  nice -n ${RUN_NICE:-10} $PY -m companion.train.cli --size cpu --corpus wikipedia --mode $mode \
    --steps $steps --warmup $(( steps / 20 )) --eval-every $every --eval-blocks 128 --lr $lr \
    --checkpoint-every $(( steps / 10 > 0 ? steps / 10 : 1 )) --threads 1 --seed 0 --log $LOG \
    "$@" --resume --out data/runs/$name > /dev/null
}
i=0
for v in "${variants[@]}"; do
  name=${v%%|*}; args=${v#*|}
  for mode in encoder decoder; do
    run "study-$name-$mode" $mode $args &
    i=$((i+1)); if (( i % JOBS == 0 )); then wait; fi
  done
done
wait
echo "compute study done $(date -u)" >> $LOG

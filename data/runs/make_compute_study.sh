#!/usr/bin/env bash
# The compute study (training chapter, "How much training does the structure need?"):
# short encoder and decoder runs on the Wikipedia corpus at one fixed token budget,
# varying one factor at a time around a base configuration, to find where the
# encoder-decoder symmetry gap leaves its null band soonest (companion.train.studies.compute_study).
#
# Base (companion.train.studies.compute_study.STUDY_BASE): 4 layers, width 128, 4 heads, 64-token blocks,
# batch 16, lr 1e-3, compact 4,096-id vocabulary.  Variants (STUDY_VARIANTS): width
# 64/256, depth 2/8, heads 2/8, lr 3e-4/3e-3, blocks of 32/128 tokens, vocabulary
# 1,024/16,384, batch 8/32.  Every run sees TOKENS tokens (default STUDY_TOKENS, 1,000,000: the step
# count follows from batch x block length), warms up over the first 5% of steps, logs 15
# evaluations of 128 held-out blocks, seed 0, one thread; `python -m companion.train.studies.compute_study
# args VARIANT` prints a variant's exact arguments.
#
# Resumable: runs checkpoint every 10% and `--resume` continues them; finished runs are
# skipped.  Usage: bash data/runs/make_compute_study.sh   (RUN_JOBS=2 runs at a time, a pool)
source "$(dirname "$0")/common.sh"
variants=$($PY -c "from companion.train.studies.compute_study import STUDY_VARIANTS; print(' '.join(STUDY_VARIANTS))")
run() {  # VARIANT MODE
  local name=study-$1-$2
  [ -f data/runs/$name/history.csv ] && return 0
  nice -n ${RUN_NICE:-10} $PY -m companion.train.cli --corpus wikipedia --mode $2 --eval-blocks 128 \
    --threads 1 --seed 0 --log $LOG $($PY -m companion.train.studies.compute_study args $1 ${TOKENS:-}) \
    --resume --out data/runs/$name > /dev/null
}
for v in $variants; do
  for mode in encoder decoder; do
    pool run $v $mode
  done
done
wait
echo "compute study done $(date -u)" >> $LOG

#!/usr/bin/env bash
# The cached runs in the regime the compute study chose (training chapters: Fig. 3, S3,
# S4, S5 and Table 1 beside the BERT-Mini runs).  The regime is the study variant that
# `python -m companion.train.studies.compute_study regime` picks from the cached study runs; every run
# has that variant's shape, schedule and token budget (`... study args VARIANT TOKENS`).
#
#   regime-VARIANT-wikipedia-MODE-INIT-sSEED   encoder and decoder x standard and symmetric
#                                              initialisation x seeds 0-2, and the authors'
#                                              decoder (standard initialisation) x seeds 0-2
#   regime-VARIANT-CORPUS-MODE-standard-s0     shakespeare and kjv, encoder and decoder (S3/S4)
#
# Seed 0 of the standard encoder and decoder repeats the study's own runs of the variant
# (the chapter checks that the two agree).  Resumable like the others; finished runs are
# skipped.  Usage: bash data/runs/make_regime_runs.sh   (RUN_JOBS=2 runs at a time, a pool)
source "$(dirname "$0")/common.sh"
REGIME=${REGIME:-$($PY -m companion.train.studies.compute_study regime)}
ARGS=$($PY -m companion.train.studies.compute_study args $REGIME ${TOKENS:-})
jobs=()
for seed in 0 1 2; do
  for mode in encoder decoder; do
    for init in standard symmetric; do
      jobs+=("wikipedia $mode $init $seed")
    done
  done
  if [[ $seed == 0 ]]; then
    jobs+=("wikipedia authors-decoder standard 0")
    for corpus in shakespeare kjv; do
      for mode in encoder decoder; do jobs+=("$corpus $mode standard 0"); done
    done
  fi
done
# the authors' decoder's other seeds last: Fig. 3, S3-S5 and Table 1 come first
for seed in 1 2; do jobs+=("wikipedia authors-decoder standard $seed"); done
run() {  # CORPUS MODE INIT SEED
  local name=regime-$REGIME-$1-$2-$3-s$4
  [ -f data/runs/$name/history.csv ] && return 0
  nice -n ${RUN_NICE:-10} $PY -m companion.train.cli --corpus $1 --mode $2 --init $3 --seed $4 \
    --eval-blocks 128 --threads 1 --log $LOG $ARGS --resume --out data/runs/$name > /dev/null
}
for job in "${jobs[@]}"; do
  pool run $job
done
wait
echo "regime runs ($REGIME) done $(date -u)" >> $LOG

#!/usr/bin/env bash
# The cached CPU runs behind the training chapters, made on a 2-core CPU, one thread per
# run, two runs at a time.  Two sets:
#   cpu-*            size "cpu" (4 layers, width 128, 4 heads, 64-token blocks): the
#                    initialisation and objective variants, 400 AdamW steps of 16 blocks;
#   cpu-bert-mini-*  size "bert-mini" (Table S1: 4 layers, width 256, 4 heads) on 128-token
#                    blocks: encoder and decoder x standard and symmetric init x 3 seeds,
#                    400 AdamW steps of 16 blocks -- the largest size that trains on two
#                    CPU cores in about an hour.
# Both use the default corpus, the compact 4096-id vocabulary, lr 1e-3 with 40 warm-up
# steps and linear decay.  Finished runs are skipped.
# Usage: bash data/runs/make_cpu_runs.sh [cpu|bert-mini|all]
source "$(dirname "$0")/common.sh"
PHASE=${1:-all}
COMMON="--steps 400 --batch-size 16 --lr 1e-3 --warmup 40 --eval-every 20 --threads 1 --log $LOG"
run() { local name=$1; shift; [ -f data/runs/$name/history.csv ] && return 0
        nice -n 10 $PY -m companion.train.cli $COMMON "$@" --out data/runs/$name > /dev/null; }
jobs=()
if [[ $PHASE == cpu || $PHASE == all ]]; then
  S="--size cpu"
  jobs+=(
  "cpu-encoder-standard-s0 $S --mode encoder --init standard --seed 0"
  "cpu-encoder-symmetric-s0 $S --mode encoder --init symmetric --seed 0"
  "cpu-decoder-standard-s0 $S --mode decoder --init standard --seed 0"
  "cpu-authors-decoder-standard-s0 $S --mode authors-decoder --init standard --seed 0"
  "cpu-encoder-standard-s1 $S --mode encoder --init standard --seed 1"
  "cpu-encoder-symmetric-s1 $S --mode encoder --init symmetric --seed 1"
  "cpu-encoder-standard-s2 $S --mode encoder --init standard --seed 2"
  "cpu-encoder-symmetric-s2 $S --mode encoder --init symmetric --seed 2"
  "cpu-encoder-symmetric-torch-default-s0 $S --mode encoder --init symmetric-torch-default --seed 0"
  "cpu-encoder-symmetric-torch-default-s1 $S --mode encoder --init symmetric-torch-default --seed 1"
  "cpu-encoder-symmetric-torch-default-s2 $S --mode encoder --init symmetric-torch-default --seed 2"
  "cpu-encoder-skew-s0 $S --mode encoder --init skew --seed 0"
  "cpu-encoder-penalty-symmetric-s0 $S --mode encoder --init standard --penalty symmetric --penalty-coef 1.0 --seed 0"
  )
fi
if [[ $PHASE == bert-mini || $PHASE == all ]]; then
  S="--size bert-mini --eval-blocks 64"
  for seed in 0 1 2; do
    for mode in encoder decoder; do
      for init in standard symmetric; do
        jobs+=("cpu-bert-mini-$mode-$init-s$seed $S --mode $mode --init $init --seed $seed")
      done
    done
  done
fi
for job in "${jobs[@]}"; do
  pool run $job
done
wait
echo "all done $(date -u)" >> $LOG

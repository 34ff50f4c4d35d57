#!/usr/bin/env bash
# The cached CPU runs on real English text (Figs. 3, S3, S4, S5 and Table 1 of the training
# chapters), at BERT-Mini size (Table S1: 4 layers, width 256, 4 heads, 128-token blocks),
# made on a 2-core CPU, one thread per run, two runs at a time.
#
#   wiki-bert-mini-*         --corpus wikipedia: encoder, decoder and the authors' decoder x
#                            standard and symmetric initialisation x seeds 0-2;
#   shakespeare-bert-mini-*, kjv-bert-mini-*
#                            the two other corpora (Figs. S3/S4): encoder and decoder,
#                            standard initialisation, seed 0.
#
# All: 2,000 AdamW steps of 16 blocks (4.1 M tokens, about 4.5 passes over the Wikipedia
# training split), lr 1e-3 with 100 warm-up steps and linear decay, the compact
# 4096-id vocabulary; every 100 steps the held-out loss on a fixed sample of 320 held-out
# blocks (the same blocks and masks for every run, so paired differences are exact), with
# its standard error.
#
# Resumable: every run checkpoints every 100 steps and `--resume` continues it, so the
# script can be stopped at any time and started again (finished runs are skipped).  Seed 0
# of every Wikipedia configuration comes first, then the other corpora, then seeds 1-2.
# Usage: bash data/runs/make_wiki_runs.sh [wiki|other|all]   (RUN_JOBS=2 runs at a time, a pool)
source "$(dirname "$0")/common.sh"
PHASE=${1:-all}
COMMON="--size bert-mini --steps 2000 --batch-size 16 --lr 1e-3 --warmup 100 --eval-every 100
        --eval-blocks 320 --checkpoint-every 100 --threads 1 --log $LOG"
jobs=()
wiki_seeds() { for seed in "$@"; do
    for mode in encoder decoder authors-decoder; do
      for init in standard symmetric; do
        jobs+=("wiki-bert-mini-$mode-$init-s$seed --corpus wikipedia --mode $mode --init $init --seed $seed")
      done
    done
  done; }
other() { for corpus in shakespeare kjv; do
    for mode in encoder decoder; do
      jobs+=("$corpus-bert-mini-$mode-standard-s0 --corpus $corpus --mode $mode --init standard --seed 0")
    done
  done; }
# Seed 0 of every Wikipedia configuration, then the other corpora, then the other seeds:
# a partial matrix is still a balanced one and draws every figure.
case $PHASE in
  wiki) wiki_seeds 0 1 2 ;;
  other) other ;;
  all) wiki_seeds 0; other; wiki_seeds 1 2 ;;
  *) echo "usage: $0 [wiki|other|all]" >&2; exit 2 ;;
esac
$PY -m companion.cli corpus fetch all > /dev/null
run() { local name=$1; shift; [ -f data/runs/$name/history.csv ] && return 0
        nice -n ${RUN_NICE:-10} $PY -m companion.train.cli $COMMON "$@" --resume --out data/runs/$name > /dev/null; }
for job in "${jobs[@]}"; do
  pool run $job
done
wait
echo "all done $(date -u)" >> $LOG

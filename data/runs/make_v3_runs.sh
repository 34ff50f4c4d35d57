#!/usr/bin/env bash
# Rules v3's confirmatory bodies (data/runs/v3_plan.md, judged by data/rules_history/verdict_rules_v3.yaml,
# committed before them): BERT-Mini, 10,000 steps, the one-mode guard logged and the weights
# at 5,000 and 10,000 steps kept; English mix (Figs. 3a/3b) and Wikipedia (Table 1, S5b).
#
# Resumable: each run checkpoints every 250 steps into $COMPANION_RUNS_WORK/NAME (default
# ~/.cache/companion/v3-runs) and continues from there; a finished run's history.csv,
# provenance.json and weight digests are copied into data/runs/NAME (history.csv last), and a
# run with data/runs/NAME/history.csv is skipped.  Usage: bash data/runs/make_v3_runs.sh
# (RUN_JOBS=2 at a time; DRY=1 prints the jobs in order and starts nothing).
source "$(dirname "$0")/common.sh"
WORK=${COMPANION_RUNS_WORK:-$HOME/.cache/companion/v3-runs}
DEVICE_ARGS=${DEVICE_ARGS:---threads 1 --cpu-bf16}
COMMON="--size bert-mini --steps 10000 --batch-size 16 --lr 1e-3 --warmup 100 --eval-every 250
        --eval-blocks 320 --checkpoint-every 250 --guard --keep-weights 5000,10000 $DEVICE_ARGS --log $LOG"
MIX=(30 31 32 33 34 35 36 37 38 39 40 41)
WIKI=(50 51 52 53 54 55 56 57 58 59 60 61)
LOOKS=(3 6 9 12)
jobs=()
prev=0
for look in "${LOOKS[@]}"; do
  for ((i = prev; i < look; i++)); do
    jobs+=("mixv3 english-mix encoder/standard ${MIX[i]}" "mixv3 english-mix decoder/standard ${MIX[i]}")
    jobs+=("wikiv3 wikipedia encoder/standard ${WIKI[i]}" "wikiv3 wikipedia encoder/symmetric ${WIKI[i]}")
  done
  for ((i = prev; i < look; i++)); do
    jobs+=("mixv3 english-mix authors-decoder/standard ${MIX[i]}")
  done
  prev=$look
done
if [ -n "${DRY:-}" ]; then
  for job in "${jobs[@]}"; do set -- $job; echo "$1-bert-mini-${3%/*}-${3#*/}-s$4"; done
  exit 0
fi
run() {  # BODY CORPUS MODE/INIT SEED
  local mode=${3%/*} init=${3#*/} seed=$4
  local name=$1-bert-mini-$mode-$init-s$seed
  [ -f data/runs/$name/history.csv ] && return 0
  local resume=""; [ -f "$WORK/$name/checkpoint.pt" ] && resume="--resume"
  mkdir -p "$WORK"
  [ -f "$WORK/$name/history.csv" ] || nice -n ${RUN_NICE:-0} $PY -m companion.train.cli $COMMON --corpus $2 \
      --mode $mode --init $init --seed $seed $resume --out "$WORK/$name" >> "$WORK/$name.out" 2>&1 \
      || { echo "FAILED $name $(date -u)" >> $LOG; return 1; }
  land "$name" "$WORK" 10000 'weights-step*.safetensors.sha256'   # a trial run is never copied as finished
}
$PY -m companion.cli corpus fetch english-mix > /dev/null
$PY -m companion.cli corpus fetch wikipedia > /dev/null
for job in "${jobs[@]}"; do
  pool run $job
done
wait
echo "v3 bodies: all done $(date -u)" >> $LOG

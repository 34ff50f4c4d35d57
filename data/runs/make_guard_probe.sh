#!/usr/bin/env bash
# The guard probes of rules v3 (data/rules_history/verdict_rules_v3.yaml, its gate's derivation): BERT-Mini,
# 200 steps, seed 99 (never a judged seed), the one-mode guard logged every 100 steps, on the
# English mix (encoder, true decoder) and on Wikipedia (encoder).  Before any memorising is
# possible, they measure how far each guard sample reads from the blocks a run has seen: the
# reason the English mix's guard compares seen with unseen training blocks, not with held-out
# ones.  A few minutes each; runs with data/runs/NAME/history.csv are skipped.
source "$(dirname "$0")/common.sh"
WORK=${COMPANION_RUNS_WORK:-$HOME/.cache/companion/v3-runs}
COMMON="--size bert-mini --steps 200 --batch-size 16 --lr 1e-3 --warmup 10 --eval-every 100
        --eval-blocks 320 --guard --threads 1 --cpu-bf16 --seed 99 --log $LOG"
run() {  # CORPUS SHORT MODE
  local name=guardprobe-$2-bert-mini-$3-standard-s99
  [ -f data/runs/$name/history.csv ] && return 0
  $PY -m companion.train.cli $COMMON --corpus $1 --mode $3 --out "$WORK/$name" --overwrite > "$WORK/$name.out" 2>&1
  land "$name" "$WORK" 200   # copied only as a finished 200-step run (common.sh)
}
mkdir -p "$WORK"
pool run english-mix mix encoder
pool run english-mix mix decoder
pool run wikipedia wiki encoder
wait

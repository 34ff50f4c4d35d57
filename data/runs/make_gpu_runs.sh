#!/usr/bin/env bash
# The GPU runs behind the training chapters, at the paper's model sizes (Table S1):
#   BERT-Mini (4 layers, width 256, 4 heads, 128-token blocks, full 30,522-id vocabulary):
#     encoder and decoder x standard / symmetric / symmetric-torch-default init x 3 seeds,
#     plus the authors' "decoder" (masked LM under a causal mask), skew-symmetric init and
#     the symmetry penalty, 3 seeds each;
#   BERT (12 layers, width 768, 12 heads) on 128-token blocks: encoder and decoder x
#     standard / symmetric init x 3 seeds.
# Small models leave a GPU mostly idle, so JOBS runs share it at once (one CPU thread each).
# Usage:  bash data/runs/make_gpu_runs.sh [JOBS] [PHASE]   PHASE = mini | bert | all (default)
# Several GPUs: run one configuration with `torchrun --nproc_per_node N -m companion.train.cli`.
# CORPUS: an offline corpus (wikipedia, the default: the token cache is built once by the
# first run and mapped by all others), or online (CORPUS=wikimedia/wikipedia or slimpajama,
# with MAX_TOKENS, e.g. 2000000000: streamed once into the token cache).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD/src HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}
PY=${PY:-python3}
JOBS=${1:-12}
PHASE=${2:-all}
CORPUS=${CORPUS:-wikipedia}
BUDGET=${MAX_TOKENS:+--max-tokens $MAX_TOKENS}
RUNS=${RUNS:-data/runs}
LOGDIR=${LOGDIR:-$RUNS/logs}
mkdir -p "$LOGDIR"
MINI="--size bert-mini --steps ${MINI_STEPS:-2000} --batch-size 32 --lr 5e-4 --warmup ${MINI_WARMUP:-100} \
--eval-every 50 --eval-blocks 256 --top-k 0 --corpus $CORPUS $BUDGET --threads 1 --checkpoint-every 250"
BERT="--size bert --seq-len 128 --steps ${BERT_STEPS:-1000} --batch-size 32 --lr 1e-4 --warmup ${BERT_WARMUP:-100} \
--eval-every 50 --eval-blocks 256 --top-k 0 --corpus $CORPUS $BUDGET --threads 1 --checkpoint-every 250"

mini_jobs() {
  for seed in 0 1 2; do
    for mode in encoder decoder; do
      for init in standard symmetric symmetric-torch-default; do
        echo "gpu-bert-mini-$mode-$init-s$seed $MINI --mode $mode --init $init --seed $seed"
      done
    done
    echo "gpu-bert-mini-authors-decoder-standard-s$seed $MINI --mode authors-decoder --init standard --seed $seed"
    echo "gpu-bert-mini-encoder-skew-s$seed $MINI --mode encoder --init skew --seed $seed"
    echo "gpu-bert-mini-encoder-penalty-symmetric-s$seed $MINI --mode encoder --init standard \
--penalty symmetric --penalty-coef 1.0 --seed $seed"
  done
}
bert_jobs() {
  for seed in 0 1 2; do
    for mode in encoder decoder; do
      for init in standard symmetric; do
        echo "gpu-bert-$mode-$init-s$seed $BERT --mode $mode --init $init --seed $seed"
      done
    done
  done
}
run_one() {  # NAME ARGS...: skip finished runs; one log per run
  local name=$1; shift
  [ -f "$RUNS/$name/history.csv" ] && return 0
  "$PY" -m companion.train.cli "$@" --resume --out "$RUNS/$name" >> "$LOGDIR/$name.log" 2>&1 \
    || { echo "FAILED $name (see $LOGDIR/$name.log)"; tail -5 "$LOGDIR/$name.log"; return 1; }
  echo "done $name"
}
export -f run_one
export PY LOGDIR RUNS
# build the token cache once, before the parallel runs map it
"$PY" -m companion.cli corpus fetch "$CORPUS" > /dev/null 2>&1 || true
"$PY" -c "import sys; from companion.train.text.data import token_data_for_corpus as t; \
t(sys.argv[1], 128, max_tokens=int(sys.argv[2]) if sys.argv[2] else None)" "$CORPUS" "${MAX_TOKENS:-}"
status=0
if [ "$PHASE" = mini ] || [ "$PHASE" = all ]; then
  mini_jobs | xargs -P "$JOBS" -L 1 bash -c 'run_one "$@"' _ || status=1
fi
if [ "$PHASE" = bert ] || [ "$PHASE" = all ]; then
  bert_jobs | xargs -P "$JOBS" -L 1 bash -c 'run_one "$@"' _ || status=1
fi
exit $status

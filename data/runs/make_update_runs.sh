#!/usr/bin/env bash
# The update-level runs of data/runs/mechanism_plan.md (rules: data/verdict_rules.yaml,
# update_structure).  Usage:
#   bash data/runs/make_update_runs.sh pilot   # the SGD learning-rate pilot (minutes; writes
#                                              # data/runs/update_lr_sgd.txt and the plan's outcome)
#   bash data/runs/make_update_runs.sh         # the runs, resumable (RUN_JOBS=2 at a time)
#   bash data/runs/make_update_runs.sh mini    # the BERT-Mini matrix on a GPU (the plan's addendum):
#                                              # its SGD pilot first, then the runs, RUN_JOBS at a time
#                                              # (default 12), one CPU thread each, sharing the GPU
#   bash data/runs/make_update_runs.sh decomp  # the plan's addendum 2: the BERT-Mini runs that log the
#                                              # start/added split (decomp-mini-*), on a GPU
source "$(dirname "$0")/common.sh"
REGIME=${REGIME:-$($PY -m companion.train.studies.compute_study regime)}
ARGS=$($PY -m companion.train.studies.compute_study args $REGIME ${TOKENS:-})
PHASE=${1:-runs}
[[ $PHASE == runs || $PHASE == pilot || $PHASE == mini || $PHASE == decomp ]] || { echo "usage: $0 [pilot|mini|decomp]" >&2; exit 2; }
if [[ $PHASE == mini || $PHASE == decomp ]]; then  # the BERT-Mini settings of make_wiki_runs.sh, on the GPU
  ARGS="--size bert-mini --steps 2000 --batch-size 16 --lr 1e-3 --warmup 100 --eval-every 100 --eval-blocks 320 --checkpoint-every 500"
  SIZE=bert-mini SEQ=128 LRFILE=data/runs/update_lr_sgd_mini.txt PREFIX=update-mini JOBS=${RUN_JOBS:-12}
  [[ $PHASE == decomp ]] && PREFIX=decomp-mini
else
  SIZE=cpu SEQ=64 LRFILE=data/runs/update_lr_sgd.txt PREFIX=update
fi
if [[ $PHASE == pilot || ( $PHASE == mini && ! -f $LRFILE ) ]]; then
  SIZE=$SIZE SEQ=$SEQ LRFILE=$LRFILE $PY - <<'PY'
import math, os, sys, time
from companion.train.text.data import token_data_for_corpus
from companion.train.runner.loop import TrainConfig, train
size, seq, lrfile = os.environ["SIZE"], int(os.environ["SEQ"]), os.environ["LRFILE"]
data = token_data_for_corpus("wikipedia", seq, top_k=4096)
rows, chosen = [], None
for lr in (0.03, 0.1, 0.3, 1.0):
    cfg = TrainConfig(size=size, mode="encoder", seed=1, steps=200, batch_size=8 if size == "cpu" else 16,
                      seq_len=seq, lr=lr, warmup=10, eval_every=100, eval_blocks=128, optimizer="sgd",
                      weight_decay=0.0, device="cpu" if size == "cpu" else None)
    h = train(cfg, data=data)
    ev = h[h.quantity == "eval_loss"].set_index("step")["value"]
    tr = h[h.quantity == "train_loss"]["value"]
    ok = math.isfinite(ev.iloc[-1]) and ev.iloc[-1] <= ev.iloc[0] - 0.1 and tr.max() <= tr.iloc[0] + 1.0
    rows.append(f"| {lr:g} | {ev.iloc[0]:.3f} | {ev.iloc[-1]:.3f} | {tr.max():.3f} | {'yes' if ok else 'no'} |")
    if ok:
        chosen = lr
if chosen is None:
    sys.exit("pilot: no rate met the rule; see data/runs/mechanism_plan.md")
open(lrfile, "w").write(f"{chosen:g}\n")
import torch
where = torch.cuda.get_device_name() if size != "cpu" and torch.cuda.is_available() else "CPU"
how = "pilot" if size == "cpu" else "mini"
with open("data/runs/mechanism_plan.md", "a") as fh:
    fh.write(f"\nRun on {time.strftime('%Y-%m-%d', time.gmtime())} with `bash data/runs/make_update_runs.sh {how}` "
             f"(size {size}, {where}):\n\n"
             "| lr | held-out loss, step 0 | step 200 | largest training loss | meets the rule |\n|---|---|---|---|---|\n"
             + "\n".join(rows) + f"\n\n`LR_SGD` = {chosen:g}; `sgd-momentum` runs at {chosen / 10:g}.\n")
print("LR_SGD", chosen)
PY
  if [[ $PHASE == pilot ]]; then exit 0; fi
fi
[ -f $LRFILE ] || { echo "run the pilot first: bash $0 pilot" >&2; exit 2; }
LR_SGD=$(cat $LRFILE)
LR_MOM=$($PY -c "print(f'{$LR_SGD / 10:g}')")
declare -A OPT=(
  [sgd]="--optimizer sgd --lr $LR_SGD --weight-decay 0"
  [adamw]="--optimizer adamw --lr 1e-3 --weight-decay 0.01"
  [paperlr]="--optimizer adamw --lr 5e-5 --warmup 200 --decay-steps 200000 --weight-decay 0.01"
  [adamw0]="--optimizer adamw --lr 1e-3 --weight-decay 0"
  [constant]="--optimizer adamw --lr 1e-3 --weight-decay 0.01 --decay-steps 1000000000"
  [nowarmup]="--optimizer adamw --lr 1e-3 --weight-decay 0.01 --warmup 0"
  [momentum]="--optimizer sgd-momentum --lr $LR_MOM --weight-decay 0"
)
jobs=()
if [[ $PHASE == decomp ]]; then
  for group in sgd adamw adamw0 paperlr; do
    for seed in 1 2 3; do for mode in encoder decoder; do jobs+=("$group $mode $seed"); done; done
  done
  for group in constant nowarmup; do for seed in 1 2 3; do jobs+=("$group encoder $seed"); done; done
else
for group in sgd adamw paperlr adamw0; do
  for seed in 1 2 3; do for mode in encoder decoder authors-decoder; do jobs+=("$group $mode $seed"); done; done
done
for group in constant nowarmup; do for seed in 1 2 3; do jobs+=("$group encoder $seed"); done; done
for seed in 1 2 3; do for mode in encoder decoder authors-decoder; do jobs+=("momentum $mode $seed"); done; done
fi
run() {  # GROUP MODE SEED
  local name=$PREFIX-$1-$REGIME-wikipedia-$2-standard-s$3
  [[ $PHASE == mini || $PHASE == decomp ]] && name=$PREFIX-$1-wikipedia-$2-standard-s$3
  local out=/dev/null; [[ -n ${RUN_LOGS:-} ]] && out=$RUN_LOGS/$name.log
  [ -f data/runs/$name/history.csv ] && return 0
  # the group's options come after the regime's, so that they win (argparse: last one counts)
  nice -n ${RUN_NICE:-10} $PY -m companion.train.cli --corpus wikipedia --mode $2 --init standard --seed $3 \
    --eval-blocks 128 --threads 1 --log $LOG $ARGS ${OPT[$1]} --log-updates 10 --resume \
    --out data/runs/$name >> "$out" 2>&1 || echo "FAILED $name ($out)"
}
for job in "${jobs[@]}"; do
  pool run $job
done
wait
echo "update runs ($REGIME) done $(date -u)" >> $LOG

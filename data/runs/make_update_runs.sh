#!/usr/bin/env bash
# The update-level runs of data/runs/mechanism_plan.md (rules: data/verdict_rules.yaml,
# update_structure).  Usage:
#   bash data/runs/make_update_runs.sh pilot   # the SGD learning-rate pilot (minutes; writes
#                                              # data/runs/update_lr_sgd.txt and the plan's outcome)
#   bash data/runs/make_update_runs.sh         # the runs, resumable (RUN_JOBS=2 at a time)
source "$(dirname "$0")/common.sh"
REGIME=${REGIME:-$($PY -m companion.train.study regime)}
ARGS=$($PY -m companion.train.study args $REGIME ${TOKENS:-})
if [[ ${1:-} == pilot ]]; then
  $PY - <<'PY'
import math, json, shlex, sys, time
from companion.train.data import token_data_for_corpus
from companion.train.loop import TrainConfig, train
data = token_data_for_corpus("wikipedia", 64, top_k=4096)
rows, chosen = [], None
for lr in (0.03, 0.1, 0.3, 1.0):
    cfg = TrainConfig(size="cpu", mode="encoder", seed=1, steps=200, batch_size=8, seq_len=64, lr=lr, warmup=10,
                      eval_every=100, eval_blocks=128, optimizer="sgd", weight_decay=0.0, device="cpu")
    h = train(cfg, data=data)
    ev = h[h.quantity == "eval_loss"].set_index("step")["value"]
    tr = h[h.quantity == "train_loss"]["value"]
    ok = math.isfinite(ev.iloc[-1]) and ev.iloc[-1] <= ev.iloc[0] - 0.1 and tr.max() <= tr.iloc[0] + 1.0
    rows.append(f"| {lr:g} | {ev.iloc[0]:.3f} | {ev.iloc[-1]:.3f} | {tr.max():.3f} | {'yes' if ok else 'no'} |")
    if ok:
        chosen = lr
if chosen is None:
    sys.exit("pilot: no rate met the rule; see data/runs/mechanism_plan.md")
open("data/runs/update_lr_sgd.txt", "w").write(f"{chosen:g}\n")
with open("data/runs/mechanism_plan.md", "a") as fh:
    fh.write(f"\nRun on {time.strftime('%Y-%m-%d', time.gmtime())} with `bash data/runs/make_update_runs.sh pilot` (CPU):\n\n"
             "| lr | held-out loss, step 0 | step 200 | largest training loss | meets the rule |\n|---|---|---|---|---|\n"
             + "\n".join(rows) + f"\n\n`LR_SGD` = {chosen:g}; `sgd-momentum` runs at {chosen / 10:g}.\n")
print("LR_SGD", chosen)
PY
  exit $?
fi
[ -f data/runs/update_lr_sgd.txt ] || { echo "run the pilot first: bash $0 pilot" >&2; exit 2; }
LR_SGD=$(cat data/runs/update_lr_sgd.txt)
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
for group in sgd adamw paperlr adamw0; do
  for seed in 1 2 3; do for mode in encoder decoder authors-decoder; do jobs+=("$group $mode $seed"); done; done
done
for group in constant nowarmup; do for seed in 1 2 3; do jobs+=("$group encoder $seed"); done; done
for seed in 1 2 3; do for mode in encoder decoder authors-decoder; do jobs+=("momentum $mode $seed"); done; done
run() {  # GROUP MODE SEED
  local name=update-$1-$REGIME-wikipedia-$2-standard-s$3
  [ -f data/runs/$name/history.csv ] && return 0
  # the group's options come after the regime's, so that they win (argparse: last one counts)
  nice -n ${RUN_NICE:-10} $PY -m companion.train.cli --corpus wikipedia --mode $2 --init standard --seed $3 \
    --eval-blocks 128 --threads 1 --log $LOG $ARGS ${OPT[$1]} --log-updates 10 --resume \
    --out data/runs/$name > /dev/null
}
for job in "${jobs[@]}"; do
  pool run $job
done
wait
echo "update runs ($REGIME) done $(date -u)" >> $LOG

#!/usr/bin/env bash
# The objective-swap runs of data/runs/objective_swap_plan.md (rule: objective_swap in
# data/verdict_rules.yaml).  Usage:
#   bash data/runs/make_swap_runs.sh pilot    # MiniLM's learning-rate pilot (writes swap_lr_minilm.txt
#                                             # and appends its outcome to the plan)
#   bash data/runs/make_swap_runs.sh minilm   # MiniLM swap (causal next-token) and control (masked LM),
#                                             # seeds 1-3, resumable, RUN_JOBS=2 at a time
source "$(dirname "$0")/common.sh"
PHASE=${1:-minilm}
[[ $PHASE == pilot || $PHASE == minilm ]] || { echo "usage: $0 [pilot|minilm]" >&2; exit 2; }
FROM=all-minilm-l6-v2
COMMON="--from $FROM --corpus wikipedia --seq-len 128 --batch-size 8 --optimizer adamw --weight-decay 0.01 --threads 1"
if [[ $PHASE == pilot ]]; then
  $PY - <<'PY'
import math, sys, time
from companion.train.data import token_data_for_corpus
from companion.train.loop import TrainConfig, train
from companion.train.pretrained import pretrained_folder

data = token_data_for_corpus("wikipedia", 128, top_k=None, tokenizer_name=pretrained_folder("all-minilm-l6-v2"))
rows, chosen = [], None
for lr in (1e-5, 3e-5, 1e-4):
    ends = {}
    for role, mode in (("control", "encoder"), ("swap", "decoder")):
        cfg = TrainConfig(size="bert-mini", mode=mode, init_from="all-minilm-l6-v2", top_k=None, seq_len=128, seed=0,
                          steps=100, batch_size=8, lr=lr, warmup=5, eval_every=100, eval_blocks=64,
                          optimizer="adamw", weight_decay=0.01, device="cpu")
        t0 = time.time()
        h = train(cfg, data=data)
        ev = h[h.quantity == "eval_loss"].set_index("step")["value"]
        ends[role] = (ev.iloc[0], ev.iloc[-1], time.time() - t0)
    (c0, c1, ct), (s0, s1, st) = ends["control"], ends["swap"]
    ok = math.isfinite(c1) and c1 <= c0 and math.isfinite(s1)
    rows.append(f"| {lr:g} | {c0:.3f} | {c1:.3f} | {s0:.3f} | {s1:.3f} | {ct / 100:.2f} / {st / 100:.2f} | {'yes' if ok else 'no'} |")
    if ok:
        chosen = lr
if chosen is None:
    sys.exit("pilot: no rate met the rule; see data/runs/objective_swap_plan.md")
open("data/runs/swap_lr_minilm.txt", "w").write(f"{chosen:g}\n")
with open("data/runs/objective_swap_plan.md", "a") as fh:
    fh.write(f"\n## The pilot's outcome (MiniLM)\n\nRun on {time.strftime('%Y-%m-%d', time.gmtime())} with "
             "`bash data/runs/make_swap_runs.sh pilot` (CPU, torch's default threads; the runs use one):\n\n"
             "| lr | control loss, step 0 | step 100 | swap loss, step 0 | step 100 | s/step control / swap | meets the rule |\n"
             "|---|---|---|---|---|---|---|\n" + "\n".join(rows) + f"\n\nMiniLM's rate: {chosen:g}.\n")
print("LR", chosen)
PY
  exit $?
fi
[ -f data/runs/swap_lr_minilm.txt ] || { echo "run the pilot first: bash $0 pilot" >&2; exit 2; }
LR=$(cat data/runs/swap_lr_minilm.txt)
run() {  # ROLE MODE SEED
  local name=swap-minilm-$1-s$3
  [ -f data/runs/$name/history.csv ] && return 0
  nice -n ${RUN_NICE:-10} $PY -m companion.train.cli $COMMON --mode $2 --seed $3 --lr $LR --steps 1000 --warmup 50 \
    --eval-every 50 --eval-blocks 128 --checkpoint-every 50 --log-updates 10 --log $LOG --resume \
    --out data/runs/$name > /dev/null 2>&1 || echo "FAILED $name"
}
for seed in 1 2 3; do
  pool run control encoder $seed
  pool run swap decoder $seed
done
wait
echo "swap runs (minilm) done $(date -u)" >> $LOG

# Sourced by the make_*.sh scripts here: the shared set-up and a pool of background runs.
#   PY (default python) runs the package from src/, offline; RUN_JOBS (default 2) runs at a
#   time; every run appends its progress to data/runs/progress.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD/src HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
PY=${PY:-python}
JOBS=${RUN_JOBS:-2}
LOG=data/runs/progress.log

# pool CMD ARGS...: start CMD in the background once fewer than JOBS runs are going
pool() {
  while (( $(jobs -rp | wc -l) >= JOBS )); do wait -n || true; done
  "$@" &
}

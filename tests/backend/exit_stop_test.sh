#!/usr/bin/env bash
# A rank stopped once its work is done (past the run's last collective, before
# MPI's finalisation, which waits for every rank) is a clear, bounded failure
# too: `mpirun -np 2 ragged run ... --collective-timeout 3` with rank 1
# stopping itself there (RAGGED_TEST_STOP_RANK_AT_EXIT) must end within 30 s
# of the launch, non-zero, with one line, rank 0's, naming rank 1.
# Usage: exit_stop_test.sh MPIEXEC RAGGED [mpirun flags...]
set -u
mpiexec=$1; ragged=$2; shift 2
tag="exit-stop-$$-$RANDOM"
err=$(mktemp); out=$(mktemp)
source "$(dirname "$0")/lost_rank_lib.sh"
trap cleanup EXIT

start=$(date +%s%N)
"$mpiexec" -np 2 "$@" -x RAGGED_TEST_TAG="$tag" -x RAGGED_TEST_STOP_RANK_AT_EXIT=1 "$ragged" run \
  tiny-llama-4xcpu --gpus 2 --steps 2 --collective-timeout 3 > "$out" 2> "$err" &
launcher=$!
expect_job_ended $start 30000 \
  "^ragged: error: rank 0: rank 1 did not reach the end of the job within --collective-timeout 3 s"
lines=$(grep -c "^ragged:" "$err")
[[ $lines -eq 1 ]] || { echo "$lines lines from ragged, not one"; cat "$err"; exit 1; }
echo "ok"

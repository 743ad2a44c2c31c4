#!/usr/bin/env bash
# A rank stopped before the job starts (before MPI's start-up exchange) is a
# clear, bounded failure too: `mpirun -np 2 ragged run ... --collective-timeout 3`
# with rank 1 stopping itself at start-up (RAGGED_TEST_STOP_RANK_AT_STARTUP)
# must end within 20 s, non-zero, with one line from rank 0 naming the timeout.
# Usage: startup_stop_test.sh MPIEXEC RAGGED [mpirun flags...]
set -u
mpiexec=$1; ragged=$2; shift 2
tag="startup-stop-$$-$RANDOM"
err=$(mktemp); out=$(mktemp)
source "$(dirname "$0")/lost_rank_lib.sh"
trap cleanup EXIT

start=$(date +%s%N)
"$mpiexec" -np 2 "$@" -x RAGGED_TEST_TAG="$tag" -x RAGGED_TEST_STOP_RANK_AT_STARTUP=1 "$ragged" run \
  tiny-llama-4xcpu --gpus 2 --steps 2 --collective-timeout 3 > "$out" 2> "$err" &
launcher=$!
expect_job_ended $start 20000 "^ragged: error: rank 0: the job did not start within --collective-timeout 3 s"
echo "ok"

#!/usr/bin/env bash
# A rank stopped before `mpirun ragged tune` starts its search (before MPI's
# start-up exchange) is a clear, bounded failure: with rank 1 stopping itself
# at start-up (RAGGED_TEST_STOP_RANK_AT_STARTUP) and --task-timeout 3, the
# job must end within 20 s, non-zero, with one line from rank 0 naming the
# timeout it ran under.
# Usage: tune_startup_stop_test.sh MPIEXEC RAGGED SCENARIO [mpirun flags...]
set -u
mpiexec=$1; ragged=$2; scenario=$3; shift 3
tag="tune-startup-stop-$$-$RANDOM"
err=$(mktemp); out=$(mktemp)
source "$(dirname "$0")/../backend/lost_rank_lib.sh"
trap cleanup EXIT

start=$(date +%s%N)
"$mpiexec" -np 2 "$@" -x RAGGED_TEST_TAG="$tag" -x RAGGED_TEST_STOP_RANK_AT_STARTUP=1 "$ragged" tune "$scenario" \
  --strategies ragged --no-cache --jobs 1 --task-timeout 3 > "$out" 2> "$err" &
launcher=$!
expect_job_ended $start 20000 "^ragged: error: rank 0: the job did not start within --task-timeout 3 s"
echo "ok"

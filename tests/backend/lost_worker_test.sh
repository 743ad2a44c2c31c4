#!/usr/bin/env bash
# A worker lost in the middle of `mpirun ragged tune` is a clear, bounded
# failure: with rank 1 of 2 stopped by SIGSTOP while it holds candidates,
# the job must end within 20 s of the stop at --task-timeout 3, non-zero,
# with one line from rank 0 naming rank 1 and the timeout.
# Usage: lost_worker_test.sh MPIEXEC RAGGED [mpirun flags...]
set -u
mpiexec=$1; ragged=$2; shift 2
tag="lost-worker-$$-$RANDOM"
err=$(mktemp); out=$(mktemp)
source "$(dirname "$0")/lost_rank_lib.sh"
trap cleanup EXIT

"$mpiexec" -np 2 "$@" -x RAGGED_TEST_TAG="$tag" "$ragged" tune --model llama3-70b --gpus 1024 --no-cache \
  --jobs 1 --task-timeout 3 > "$out" 2> "$err" &
launcher=$!
victim=$(wait_for_rank_1) || exit 1
sleep 3  # the search runs: rank 1 holds a candidate
kill -STOP $victim
stopped=$(date +%s%N)
expect_job_ended $stopped 20000 "^ragged: error: rank 0: worker rank 1 has not been heard from for .* --task-timeout 3 s"
echo "ok"

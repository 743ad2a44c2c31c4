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
ranks_with_tag() {
  for dir in /proc/[0-9]*; do
    [[ -r $dir/environ ]] || continue
    if tr '\0' '\n' < "$dir/environ" 2>/dev/null | grep -qx "RAGGED_TEST_TAG=$tag" &&
       tr '\0' '\n' < "$dir/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
      echo "${dir#/proc/}"
    fi
  done
}
cleanup() {
  for rank in 0 1; do for pid in $(ranks_with_tag $rank); do kill -KILL "$pid" 2>/dev/null; done; done
  rm -f "$err" "$out"
}
trap cleanup EXIT

"$mpiexec" -np 2 "$@" -x RAGGED_TEST_TAG="$tag" "$ragged" tune --model llama3-70b --gpus 1024 --no-cache \
  --jobs 1 --task-timeout 3 > "$out" 2> "$err" &
launcher=$!
victim=""
for _ in $(seq 1 200); do
  victim=$(ranks_with_tag 1)
  [[ -n $victim ]] && break
  sleep 0.1
done
[[ -n $victim ]] || { echo "rank 1 never started"; cat "$err"; exit 1; }
sleep 3  # the search runs: rank 1 holds a candidate
kill -STOP $victim
stopped=$(date +%s%N)
for _ in $(seq 1 300); do
  kill -0 $launcher 2>/dev/null || break
  sleep 0.1
done
if kill -0 $launcher 2>/dev/null; then
  echo "the job still runs 30 s after rank 1 stopped"; kill -KILL $launcher; cat "$err"; exit 1
fi
wait $launcher; code=$?
elapsed_ms=$(( ($(date +%s%N) - stopped) / 1000000 ))
echo "exit $code, ended ${elapsed_ms} ms after rank 1 stopped"
grep "^ragged:" "$err"
[[ $code -ne 0 ]] || { echo "exit code 0"; exit 1; }
(( elapsed_ms <= 20000 )) || { echo "took longer than 20 s"; exit 1; }
grep -q "^ragged: error: rank 0: worker rank 1 has not been heard from for .* --task-timeout 3 s" "$err" ||
  { echo "no lost-worker line from rank 0"; cat "$err"; exit 1; }
echo "ok"

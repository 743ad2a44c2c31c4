#!/usr/bin/env bash
# A lost rank is a clear, bounded failure: `mpirun -np 2 ragged run ...
# --collective-timeout 5` with rank 1 stopped by SIGSTOP must end within 15 s,
# non-zero, with one line naming rank 1 and the timeout.
# Usage: lost_rank_test.sh MPIEXEC RAGGED [mpirun flags...]
set -u
mpiexec=$1; ragged=$2; shift 2
tag="lost-rank-$$-$RANDOM"
err=$(mktemp); out=$(mktemp)
ranks_with_tag() {  # pids of this test's ragged processes of rank $1
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

"$mpiexec" -np 2 "$@" -x RAGGED_TEST_TAG="$tag" "$ragged" run tiny-llama-4xcpu --gpus 2 --steps 5000 \
  --collective-timeout 5 > "$out" 2> "$err" &
launcher=$!

# Let both ranks start training (the watchdog starts once the Program is built).
victim=""
for _ in $(seq 1 200); do
  victim=$(ranks_with_tag 1)
  [[ -n $victim ]] && break
  sleep 0.1
done
[[ -n $victim ]] || { echo "rank 1 never started"; cat "$err"; exit 1; }
sleep 2
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
(( elapsed_ms <= 15000 )) || { echo "took longer than 15 s"; exit 1; }
line=$(grep "^ragged: error: rank 0 waited" "$err") || { echo "no watchdog line from rank 0"; cat "$err"; exit 1; }
[[ $line == *"--collective-timeout 5"* && $line == *"rank 1"* ]] || { echo "the line names neither rank 1 nor the timeout"; exit 1; }
echo "ok"

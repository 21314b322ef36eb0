#!/usr/bin/env bash
# A grid sweep under `mpirun -np 2` writes the same merged sweep.csv and the same run folders
# as one rank (and as a run without mpirun). Usage: mpi_sweep_test.sh KVSIM MPIRUN
set -euo pipefail
kvsim=$1
mpirun=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Open MPI refuses root unless told; CI containers often run as root. --oversubscribe: two ranks
# even on a one-core machine.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
args=(sweep --trace traces/data/sharegpt_sample.kvtrace --vary request-rate=2,8,32 --vary block-size=16,32
      --limit 60 --kv-cache-tokens 200000 --jobs 1 --progress off --no-plot)
"$kvsim" "${args[@]}" --out "$out/plain" > /dev/null
"$mpirun" -np 1 "$kvsim" "${args[@]}" --out "$out/one" > /dev/null
"$mpirun" -np 2 "$kvsim" "${args[@]}" --out "$out/two" > /dev/null
cmp "$out/plain/sweep.csv" "$out/one/sweep.csv"
cmp "$out/one/sweep.csv" "$out/two/sweep.csv"
diff -r "$out/one/points" "$out/two/points"
test "$(wc -l < "$out/two/sweep.csv")" -eq 7
echo "mpi_sweep_test: -np 2, -np 1 and no mpirun give identical results"

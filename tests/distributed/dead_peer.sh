#!/usr/bin/env bash
# Runs test_dead_peer on N ranks with Open MPI's recovery mode (so the launcher
# does not kill the job when a rank dies) and expects N-1 PASS lines.
set -uo pipefail
exe="$1"; np="$2"
out=$(timeout 120 mpirun -np "$np" --oversubscribe --enable-recovery "$exe" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 124 ] && { echo "dead_peer: the job hung (killed after 120 s)"; exit 1; }
pass=$(grep -c "^dead-peer: rank [0-9]* PASS" <<<"$out")
[ "$pass" -eq $((np - 1)) ] || { echo "dead_peer: $pass of $((np - 1)) surviving ranks passed"; exit 1; }
echo "dead_peer: every surviving rank of $np failed with the timeout error in time"

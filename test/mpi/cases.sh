#!/usr/bin/env bash
# MPI instances end to end (label "mpi", docs/distributed.md): a real mpirun
# starts 2, 4 or 8 poprun-lite ranks on this machine.
# Usage: cases.sh CASE BIN_DIR SOURCE_DIR SCRATCH_DIR
. "$(dirname "${BASH_SOURCE[0]}")/../e2e/common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# No stdin for mpirun (CI has none); every rank on this host, more ranks than cores.
mpi() { local n=$1; shift; mpirun --oversubscribe -np "$n" "$@" </dev/null; }
MLP=$SRC/samples/mlp/model.onnx
# train_case NAME: make_case.py's model, data and torch's weights in ./NAME
train_case() {
  "$PY" "$SRC/test/train/make_case.py" "$1" "$1" --steps 10 >"$1.log" 2>&1 || { cat "$1.log"; die "make_case $1"; }
  # shellcheck disable=SC2046
  "$BIN/popc-onnx" "$1/model.onnx" -o "$1/train.popef" $(cat "$1/flags.txt") || die "compile $1"
}
run1() { "$BIN/poprun-lite" "$@" || die "single process: poprun-lite $*"; }

case $CASE in

inference)
  # One popef, replication 8, 3 batches per step: the same bytes from 1, 2, 4 and 8 instances.
  "$BIN/popc-onnx" "$MLP" -o r8.popef --replication-factor 8 --batches-per-step 3 || die "compile"
  run1 r8.popef --fill random --seed 7 --iterations 2 --outputs single.npz
  for n in 1 2 4 8; do
    mpi $n "$BIN/poprun-lite" r8.popef --fill random --seed 7 --iterations 2 --outputs np$n.npz \
      --cache-dir jit >np$n.log 2>&1 || { cat np$n.log; die "mpirun -np $n failed"; }
    cmp single.npz np$n.npz || die "-np $n: outputs differ from one process"
  done
  # only rank 0 writes: one file, and ranks 1.. printed nothing
  [ "$(grep -c . np8.log)" = 0 ] || die "ranks printed: $(cat np8.log)"
  # --report names the instances and the replicas each runs
  mpi 2 "$BIN/poprun-lite" r8.popef --fill zeros --report --cache-dir jit >rep.txt 2>&1 || die "report"
  grep -q "MPI instances 2: this one runs replicas 0-3 of 8" rep.txt || die "report: $(cat rep.txt)"
  ;;

training)
  # Data-parallel training: K steps on N ranks equal one process with R replicas
  # bit for bit, and torch's full batch within float tolerance.
  for spec in mlp_adam_repl4:2 mlp_adam_repl4:4 mlp_sgd_repl8:8 cnn_momentum_accum2_repl2:2; do
    c=${spec%:*} n=${spec#*:}
    [ -f $c/train.popef ] || train_case $c
    [ -f $c/single.npz ] || run1 $c/train.popef --inputs $c/data.npz --iterations 10 --save-weights $c/single.npz \
      --outputs $c/single_out.npz >/dev/null
    mpi $n "$BIN/poprun-lite" $c/train.popef --inputs $c/data.npz --iterations 10 --save-weights $c/np$n.npz \
      --outputs $c/np${n}_out.npz --report --cache-dir jit >$c/np$n.log 2>&1 ||
      { cat $c/np$n.log; die "$c: mpirun -np $n failed"; }
    cmp $c/single.npz $c/np$n.npz || die "$c -np $n: weights differ from one process with the same replicas"
    cmp $c/single_out.npz $c/np${n}_out.npz || die "$c -np $n: losses differ from one process"
    "$BIN/npz-compare" --subset --rtol 1e-4 --atol 1e-5 $c/np$n.npz $c/expected_weights.npz >/dev/null ||
      die "$c -np $n: weights differ from torch's full batch"
    # the all-reduce went over the host link, and the report says how much
    grep -Eq "host all-reduce [1-9][0-9]* bytes" $c/np$n.log || die "$c: no host all-reduce: $(cat $c/np$n.log)"
  done
  # the execution profile shows the all-reduce steps on the host link, and the summary the replicas
  c=mlp_adam_repl4
  mpi 2 "$BIN/poprun-lite" $c/train.popef --inputs $c/data.npz --iterations 10 --profile-dir prof --summary \
    --cache-dir jit >sum.txt 2>&1 || { cat sum.txt; die "profile run"; }
  "$PY" - <<'PY' || die "execution profile"
import json
steps = json.load(open("prof/execution.json"))["simulation"]["steps"]
host = [s for s in steps if s.get("hostAllReduce")]
assert host and all(s["type"] == "GlobalExchange" and s["totalData"] > 0 for s in host), host[:2]
print(len(host), "host all-reduce steps")
PY
  grep -Eq "Number of Replicas: +4" sum.txt && grep -Eq "IPUs per Replica: +1" sum.txt || die "summary: $(cat sum.txt)"
  ;;

resume)
  # --load-weights is read by rank 0 and broadcast; stopping and resuming on 2
  # ranks ends where 10 uninterrupted steps do.
  c=mlp_adam_repl4; train_case $c
  run1 $c/train.popef --inputs $c/data.npz --iterations 10 --save-weights full.npz >/dev/null
  mpi 2 "$BIN/poprun-lite" $c/train.popef --inputs $c/data_a.npz --iterations 5 --save-weights half.npz >/dev/null ||
    die "first half"
  mpi 2 "$BIN/poprun-lite" $c/train.popef --inputs $c/data_b.npz --iterations 5 --load-weights half.npz \
    --save-weights resumed.npz >/dev/null || die "second half"
  "$BIN/npz-compare" --rtol 0 --atol 0 resumed.npz full.npz >/dev/null || die "resumed weights differ"
  ;;

errors)
  "$BIN/popc-onnx" "$MLP" -o r4.popef --replication-factor 4 || die "compile"
  # replicas that do not divide over the ranks: every rank says so, nothing runs
  mpi 3 "$BIN/poprun-lite" r4.popef --fill random >e1.log 2>&1 && die "-np 3 with 4 replicas ran"
  [ "$(grep -c "4 replicas (popc-onnx --replication-factor 4) do not divide over 3 MPI ranks" e1.log)" = 3 ] ||
    die "not one line per rank: $(cat e1.log)"
  # a batch that does not split over the replicas: one line on every rank, before any step
  mpi 2 "$BIN/poprun-lite" r4.popef --input input=6x64xf32=0.5 >e2.log 2>&1 && die "a bad batch ran"
  [ "$(grep -c "'input' has shape \[6,64\], expected \[4,4,64\].*split over 4 replicas (2 per rank on 2 ranks)" e2.log)" = 2 ] ||
    die "not one line per rank: $(cat e2.log)"
  # --benchmark is one process's
  mpi 2 "$BIN/poprun-lite" r4.popef --fill random --benchmark 3 >e3.log 2>&1 && die "--benchmark ran under mpirun"
  grep -q "under mpirun use --iterations" e3.log || die "$(cat e3.log)"
  ;;

faults)
  "$BIN/popc-onnx" "$MLP" -o r4.popef --replication-factor 4 || die "compile"
  # The ranks only: their command line starts with the binary (mpirun's, and
  # that of any process mpirun forks, starts with "mpirun" and holds the same words).
  ranks() { pgrep -f "^$BIN/poprun-lite r4.popef --fill random --iterations 100000000"; }
  wait_ranks() {
    for _ in $(seq 300); do [ "$(ranks | wc -l)" -ge 2 ] && return 0; sleep 0.1; done
    die "the ranks did not start"
  }
  # A rank killed mid-run: the others stop at once with a message, mpirun exits non-zero.
  mpi 2 "$BIN/poprun-lite" r4.popef --fill random --iterations 100000000 --timeout 120 >k.log 2>&1 &
  job=$!
  wait_ranks; sleep 1
  kill -9 "$(ranks | tail -1)"
  start=$SECONDS
  wait $job && die "mpirun exited 0 after a rank was killed"
  [ $((SECONDS - start)) -lt 60 ] || die "the other rank took $((SECONDS - start)) s to stop"
  grep -q "stopped by mpirun: another rank failed or was killed" k.log || die "no message: $(cat k.log)"
  grep -q "exited on signal 9" k.log || die "mpirun did not name the rank: $(cat k.log)"
  # A rank that hangs (SIGSTOP): the others stop within --timeout, say why, and end the job.
  mpi 2 "$BIN/poprun-lite" r4.popef --fill random --iterations 100000000 --timeout 6 >h.log 2>&1 &
  job=$!
  wait_ranks; sleep 1
  kill -STOP "$(ranks | tail -1)"
  start=$SECONDS
  wait $job && die "mpirun exited 0 after a rank hung"
  [ $((SECONDS - start)) -lt 60 ] || die "took $((SECONDS - start)) s to stop"
  # Stopped mid-run it waits for the other ranks; on a loaded machine the stop can
  # come while the ranks still load (their collective after loading then waits).
  grep -qE "stopped by --timeout 6 s( after [0-9]* complete iteration\(s\), waiting for the other ranks|: the current step \(loading, JIT or a vertex\) did not return)" h.log ||
    die "no timeout message: $(cat h.log)"
  pkill -9 -f "poprun-lite r4.popef --fill random --iterations 100000000" || true
  ;;

compile_once)
  # Every rank compiles before it runs (a common job script): one compile, the rest hit.
  mpi 4 bash -c '"$0" "$1" -o m$OMPI_COMM_WORLD_RANK.popef --cache-dir c --replication-factor 4 --log-level info \
    2>c$OMPI_COMM_WORLD_RANK.log && "$2" m$OMPI_COMM_WORLD_RANK.popef --fill random --outputs o.npz --cache-dir c' \
    "$BIN/popc-onnx" "$MLP" "$BIN/poprun-lite" >run.log 2>&1 || { cat run.log c*.log; die "job failed"; }
  [ "$(grep -l "cache hit" c*.log | wc -l)" = 3 ] || die "want 3 hits: $(cat c*.log)"
  awk '$1 == "exe.writes" { w = $2 } END { exit w != 1 }' c/stats || die "stats: $(cat c/stats)"
  [ -f o.npz ] || die "rank 0 wrote no outputs"
  ;;

*) die "unknown case $CASE" ;;
esac

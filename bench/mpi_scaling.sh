#!/usr/bin/env bash
# Data-parallel training over MPI instances (docs/distributed.md): steps per
# second and peak memory per rank against the number of ranks, for one popef
# compiled with --replication-factor R (default: ResNet-18, R = 2, momentum).
#
#   bench/mpi_scaling.sh [--model resnet18|PATH.onnx] [--replicas R] [--ranks "1 2"]
#                        [--steps K] [--bin-dir build/bin] [--work DIR]
#
# Each rank count N (dividing R) runs the same K steps on the same data:
# N = 1 is one process holding all R replicas (the threads are the machine's
# cores), N > 1 gives each rank R/N replicas and cores/N threads. The weights
# after K steps must be identical for every N; the script checks that.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
model=resnet18 replicas=2 ranks="1 2" steps=3 bin=$src/build/bin work=/tmp/popc-mpi-scaling
while [ $# -gt 0 ]; do
  case $1 in
    --model) model=$2; shift 2 ;;
    --replicas) replicas=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --bin-dir) bin=$(cd "$2" && pwd); shift 2 ;;
    --work) work=$2; shift 2 ;;
    -h|--help) sed -n 2,13p "$0"; exit 0 ;;
    *) echo "mpi_scaling.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$work" && cd "$work"
py=/usr/bin/python3
if [ -f "$model" ]; then onnx=$model; else
  [ -f "$model/model.onnx" ] || "$py" "$src/test/models/export_models.py" . "$model" >/dev/null
  onnx=$model/model.onnx
fi
# Training data for K steps: the model's first input with R micro-batches per
# step, and an l1 loss on its first output (no labels needed).
"$py" - "$onnx" "$replicas" "$steps" <<'PY'
import sys, numpy as np, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
inits = {i.name for i in m.graph.initializer}
x = next(i for i in m.graph.input if i.name not in inits)
shape = [d.dim_value or 1 for d in x.type.tensor_type.shape.dim]
r, k = int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
np.savez("data.npz", **{x.name: rng.standard_normal([k * r] + shape).astype(np.float32)})
open("loss.txt", "w").write(f"l1:{m.graph.output[0].name},0.01")
PY
popef=train_r$replicas.popef
if [ ! -f "$popef" ]; then
  start=$SECONDS
  "$bin/popc-onnx" "$onnx" -o "$popef" --train --loss "$(cat loss.txt)" --optimizer momentum --momentum 0.9 \
    --learning-rate 0.001 --replication-factor "$replicas" --quiet
  echo "compiled $popef in $((SECONDS - start)) s ($(du -m "$popef" | cut -f1) MB)"
fi
cores=$(nproc)
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $cores cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "model $onnx, replication factor $replicas, $steps steps; $(date -Iseconds); popc $(git -C "$src" rev-parse --short HEAD)"
echo
printf "| ranks | replicas per rank | threads per rank | steps/s | s per step | peak RSS per rank (MB) | weights |\n"
printf "|---|---|---|---|---|---|---|\n"
for n in $ranks; do
  [ $((replicas % n)) = 0 ] || { echo "skipping $n ranks: $replicas replicas do not divide"; continue; }
  threads=$(( cores / n > 0 ? cores / n : 1 ))
  # Warm the JIT cache once so every count times the same work; 1 step then K steps.
  rm -f rss.*
  cmd=(env POPC_LOG_LEVEL=warn /usr/bin/time -o rss.%r -f %M "$bin/poprun-lite" "$popef" --inputs data.npz
       --iterations "$steps" --save-weights "w$n.npz" --cache-dir jit --report)
  launch() {
    if [ "$n" = 1 ]; then "${cmd[@]//%r/0}"; else
      mpirun --oversubscribe -np "$n" bash -c 'exec "${@//%r/$OMPI_COMM_WORLD_RANK}"' _ "${cmd[@]}"; fi
  }
  launch >warm$n.log 2>&1 </dev/null || { cat warm$n.log; exit 1; }
  launch >run$n.log 2>&1 </dev/null || { cat run$n.log; exit 1; }
  secs=$(sed -n 's/.* run \([0-9.]*\) s (.*/\1/p' run$n.log | head -1)
  rss=$(cat rss.* | sort -n | tail -1)
  same="same"
  [ "$n" = "${ranks%% *}" ] && cp "w$n.npz" w_ref.npz || cmp -s "w$n.npz" w_ref.npz || same="DIFFERENT"
  awk -v n="$n" -v per=$((replicas / n)) -v t="$threads" -v k="$steps" -v s="$secs" -v m=$((rss / 1024)) \
    -v same="$same" 'BEGIN { printf "| %s | %s | %s | %.3f | %.3f | %s | %s |\n", n, per, t, k / s, s / k, m, same }'
done

# Sourced by run.sh and compare.sh: installs ONNX Runtime from npm into bench/node_modules
# on first use (optional: without it the ORT columns read n/a; POPC_BENCH_NO_NPM=1 skips).
ensure_onnxruntime() {
  local dir="$1"
  if [[ ! -d "$dir/node_modules/onnxruntime-node" && -z "${POPC_BENCH_NO_NPM:-}" ]] && command -v npm >/dev/null; then
    (cd "$dir" && npm install --ignore-scripts --no-audit --no-fund >&2) ||
      echo "bench: npm install failed; ORT will be n/a" >&2
  fi
  return 0
}

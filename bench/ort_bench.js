#!/usr/bin/env node
// ONNX Runtime (CPU) baseline for bench.py: times InferenceSession.run on one
// model with intraOpNumThreads = --threads.
//
//   node bench/ort_bench.js SPEC.json
//
// SPEC.json (written by bench.py, which reads the .npz so this file needs no
// npz parser): {"model": "m.onnx", "threads": 2, "warmup": 5, "repeats": 5,
// "iterations": 0 (0 = calibrate to ~target_seconds per repeat), "target_seconds": 0.3,
// "inputs": [{"name", "dtype", "shape", "file"}], "outputs_dir": "DIR" | null}
// Input files hold raw little-endian row-major data.
//
// Prints one JSON line: {"ok": true, "version", "iterations", "ms_per_iteration": [..],
// "outputs": [{"name", "dtype", "shape", "file"}]} or {"ok": false, "error": "..."}.
'use strict';
const fs = require('fs');
const path = require('path');

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array,
  int16: Int16Array, int32: Int32Array, int64: BigInt64Array, bool: Uint8Array,
};

function fail(message) {
  process.stdout.write(JSON.stringify({ ok: false, error: message }) + '\n');
  process.exit(0); // bench.py reads the JSON; a missing ORT is "n/a", not a crash
}

function loadInput(ort, desc) {
  const Ctor = ARRAYS[desc.dtype];
  if (!Ctor) fail(`${desc.file}: input ${desc.name} has dtype ${desc.dtype}, which this script does not map`);
  const buf = fs.readFileSync(desc.file);
  const data = new Ctor(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
  return new ort.Tensor(desc.dtype, data, desc.shape);
}

async function main() {
  if (process.argv.length !== 3) fail('usage: node ort_bench.js SPEC.json');
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  let ort;
  try {
    ort = require('onnxruntime-node');
  } catch (e) {
    fail(`onnxruntime-node is not installed (cd bench && npm install --ignore-scripts): ${e.message.split('\n')[0]}`);
  }
  const version = require('onnxruntime-node/package.json').version;
  const session = await ort.InferenceSession.create(spec.model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: spec.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const feeds = {};
  for (const desc of spec.inputs) feeds[desc.name] = loadInput(ort, desc);

  let outputs;
  for (let i = 0; i < Math.max(1, spec.warmup); ++i) outputs = await session.run(feeds);

  const timeRuns = async (n) => {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; ++i) await session.run(feeds);
    return Number(process.hrtime.bigint() - t0) / 1e6; // ms
  };
  let iterations = spec.iterations;
  if (!iterations) { // calibrate: enough runs for ~target_seconds per repeat
    const probe = Math.max(await timeRuns(10) / 10, 1e-4);
    iterations = Math.min(100000, Math.max(10, Math.round(spec.target_seconds * 1e3 / probe)));
  }
  const perIteration = [];
  for (let r = 0; r < spec.repeats; ++r) perIteration.push(await timeRuns(iterations) / iterations);

  const written = [];
  if (spec.outputs_dir) {
    for (const name of session.outputNames) {
      const t = outputs[name];
      const file = path.join(spec.outputs_dir, `${written.length}.bin`);
      fs.writeFileSync(file, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
      written.push({ name, dtype: t.type, shape: t.dims, file });
    }
  }
  process.stdout.write(JSON.stringify({
    ok: true, version, iterations, ms_per_iteration: perIteration, outputs: written,
  }) + '\n');
}

main().catch((e) => fail(String(e && e.message ? e.message : e).split('\n')[0]));

#!/usr/bin/env python3
"""Cache benchmark: whole-process wall time of a cold popc-onnx compile vs a cache hit,
and of a cold vs warm poprun-lite start (JIT object cache). See docs/performance.md
("Cache: cold compile vs cache hit") and docs/cache.md.

    /usr/bin/python3 bench/cache_bench.py --bin-dir build/bin                 # samples/mlp, samples/cnn
    /usr/bin/python3 bench/cache_bench.py --bin-dir build/bin --resnet50 /tmp/rn50   # + ResNet-50

--resnet50 DIR exports torchvision's resnet50() (random weights, opset 13) to DIR/model.onnx
and DIR/inputs.npz on first use (kept out of git).
"""
import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)


CPU_SECONDS = []  # user+sys of each run(), for tables measured on a busy machine


def run(cmd, env=None):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU_SECONDS.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    if p.returncode != 0:
        sys.exit(f"cache_bench: {' '.join(cmd)} failed:\n{p.stderr}")
    return dt, p.stdout + p.stderr


def export_resnet50(d):
    model, inputs = os.path.join(d, "model.onnx"), os.path.join(d, "inputs.npz")
    if not os.path.exists(model):
        os.makedirs(d, exist_ok=True)
        code = (
            "import torch, torchvision, numpy as np\n"
            "torch.manual_seed(0)\n"
            "m = torchvision.models.resnet50().eval()\n"
            "x = torch.randn(1, 3, 224, 224)\n"
            f"torch.onnx.export(m, x, {model!r}, opset_version=13, input_names=['input'], output_names=['output'])\n"
            f"np.savez({inputs!r}, input=x.numpy())\n")
        subprocess.run(["/usr/bin/python3", "-c", code], check=True)
    return model, inputs


def bench_model(name, model, inputs, bindir, repeats, threads, work):
    onnx_mb = os.path.getsize(model) / 1e6
    big = onnx_mb > 10
    cold_repeats = 1 if big else repeats
    out = os.path.join(work, name + ".popef")
    env = dict(os.environ)
    for v in ("POPC_CACHE_DIR", "POPC_REMOTE_CACHE", "POPC_PRELOAD_POPEF", "POPC_LOG_LEVEL"):
        env.pop(v, None)

    def compile_(cache):
        if os.path.exists(out):
            os.remove(out)  # measure writing a new file, as a CI job does
        return run([os.path.join(bindir, "popc-onnx"), model, "-o", out, "--cache-dir", cache], env)

    cold, hit, hit_cpu = [], [], []
    for r in range(cold_repeats):
        cache = os.path.join(work, f"{name}-exe-{r}")
        cold.append(compile_(cache)[0])
    # An entry younger than 2 s is re-hashed on every hit (docs/cache.md, "Hits without
    # re-hashing"); CI hits come much later. The first settled hit hashes and stamps it.
    time.sleep(2.1)
    first_hit = compile_(cache)[0]
    for _ in range(repeats):
        dt, log = compile_(cache)
        hit.append(dt)
        hit_cpu.append(CPU_SECONDS[-1])
    _, log = run([os.path.join(bindir, "popc-onnx"), model, "-o", out, "--cache-dir", cache, "--log-level", "info"], env)
    assert "cache hit" in log, log
    popef_mb = os.path.getsize(out) / 1e6

    def start(cache):
        cmd = [os.path.join(bindir, "poprun-lite"), out, "--threads", str(threads), "--report",
               "--outputs", os.path.join(work, "o.npz"), "--cache-dir", cache]
        if inputs:
            cmd += ["--inputs", inputs]
        dt, log = run(cmd, env)
        jit = float(re.search(r"JIT ([0-9.]+) s", log).group(1))
        return dt, jit

    rcold, rwarm = [], []
    for r in range(cold_repeats):
        cache = os.path.join(work, f"{name}-obj-{r}")
        rcold.append(start(cache))
    for _ in range(repeats):
        rwarm.append(start(cache))
    med = statistics.median
    startup = med(run([os.path.join(bindir, "popc-onnx"), "--version"], env)[0] for _ in range(repeats))
    return dict(name=name, onnx_mb=onnx_mb, popef_mb=popef_mb, cold=med(cold), first_hit=first_hit, hit=med(hit), hit_cpu=med(hit_cpu),
                startup=startup,
                run_cold=med(t for t, _ in rcold), jit_cold=med(j for _, j in rcold),
                run_warm=med(t for t, _ in rwarm), jit_warm=med(j for _, j in rwarm))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default=os.path.join(SRC, "build", "bin"))
    ap.add_argument("--repeats", type=int, default=5, help="runs per measurement (median); cold runs of "
                    "models over 10 MB run once")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--resnet50", metavar="DIR", help="also benchmark ResNet-50 (exported into DIR)")
    ap.add_argument("--work", help="scratch directory (default: a temporary one, removed)")
    a = ap.parse_args()

    models = [(s, os.path.join(SRC, "samples", s, "model.onnx"), os.path.join(SRC, "samples", s, "inputs.npz"))
              for s in ("mlp", "cnn")]
    if a.resnet50:
        models.append(("resnet50", *export_resnet50(a.resnet50)))
    work = a.work or tempfile.mkdtemp(prefix="popc-cache-bench-")
    os.makedirs(work, exist_ok=True)
    load0 = os.getloadavg()[0]
    rows = [bench_model(n, m, i, a.bin_dir, a.repeats, a.threads, work) for n, m, i in models]
    load1 = os.getloadavg()[0]
    if not a.work:
        shutil.rmtree(work)
    print(f"load average {load0:.1f} before, {load1:.1f} after; {a.threads} threads; median of {a.repeats} "
          "(cold runs of models over 10 MB: 1)\n")
    print("| model | ONNX MB | popef MB | popc-onnx cold | first hit (hashes the entry) | cache hit: wall (CPU) | process start alone | speed-up | "
          "poprun-lite cold start (JIT) | poprun-lite warm start (JIT) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['name']} | {r['onnx_mb']:.1f} | {r['popef_mb']:.1f} | {r['cold']:.3f} s | {r['first_hit']:.3f} s | "
              f"{r['hit']:.3f} s ({r['hit_cpu']:.3f} s) | {r['startup']:.3f} s | "
              f"{r['cold'] / r['hit']:.0f}x | {r['run_cold']:.3f} s ({r['jit_cold']:.3f} s) | "
              f"{r['run_warm']:.3f} s ({r['jit_warm']:.3f} s) |")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Benchmarks popc against PyTorch-CPU and ONNX Runtime on the same models.

    /usr/bin/python3 bench/bench.py [MODEL.onnx[:INPUTS.npz] ...] [--threads 2] [--bin-dir DIR]

With no model arguments it runs samples/mlp and samples/cnn. A model's inputs default to
inputs.npz beside it. For each model it prints, in one markdown table:

  popc compile   wall time of `popc-onnx model.onnx -o m.popef` (whole process)
  poprun-lite    steady-state time per inference: `poprun-lite --iterations N --report`,
                 per-iteration run time with load, JIT and the warm-up iterations removed
                 (run time of W+N iterations minus run time of W iterations, divided by N)
  PyTorch        the samples' torch module (rebuilt from samples/generate.py), torch.set_num_threads
                 = threads; n/a for other ONNX files (no ONNX->torch converter in Debian)
  ORT            onnxruntime-node from bench/node_modules, intraOpNumThreads = threads; n/a if
                 node or the package is missing
  IPU cycles     simulated cycles per inference, and cycles / clock = time on the modelled IPU

Every timed figure is the median of --repeats measurements taken after warm-up runs.
A second table shows where poprun-lite and popc-onnx spend their time. --json FILE writes
all raw numbers.
"""
import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)
SAMPLES_DIR = os.path.join(REPO, "samples")
DEFAULT_MODELS = ["samples/mlp/model.onnx", "samples/cnn/model.onnx"]
TOLERANCE = 1e-3  # max |output - reference| before a warning


# ---------------------------------------------------------------- helpers

def run(cmd, **kw):
    """Runs a command, returns (stdout, wall seconds); raises with its stderr on failure."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip() or p.stdout.strip()}")
    return p.stdout, wall


def median(xs):
    return statistics.median(xs) if xs else None


def max_abs_diff(a, b):
    """Largest |a-b| over the arrays both maps share (None if none are comparable)."""
    worst = None
    for k in sorted(set(a) & set(b)):
        x, y = np.asarray(a[k], dtype=np.float64), np.asarray(b[k], dtype=np.float64)
        if x.shape != y.shape:
            return float("inf")
        d = float(np.max(np.abs(x - y))) if x.size else 0.0
        worst = d if worst is None else max(worst, d)
    return worst


def load_npz(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def sample_name(model_path):
    """'mlp' if model_path is samples/mlp/model.onnx of this repo, else None."""
    rel = os.path.relpath(os.path.realpath(model_path), os.path.realpath(SAMPLES_DIR))
    parts = rel.split(os.sep)
    if len(parts) == 2 and parts[1] == "model.onnx" and not rel.startswith(".."):
        return parts[0]
    return None


def find_bin(bin_dir, name):
    path = os.path.join(bin_dir, name)
    if not os.access(path, os.X_OK):
        sys.exit(f"bench: {path} not found: build popc first (tools/build.sh) or pass --bin-dir DIR")
    return path


# ---------------------------------------------------------------- machine

def machine_description(threads):
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        nproc = len(os.sched_getaffinity(0))
    except AttributeError:
        nproc = os.cpu_count()
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = f"{kb / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return {"cpu": cpu, "nproc": nproc, "memory": mem, "kernel": platform.release(),
            "threads": threads}


def git_commit():
    try:
        out, _ = run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])
        dirty, _ = run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"])
        return out.strip() + (" (+local changes)" if dirty.strip() else "")
    except (RuntimeError, OSError):
        return "unknown"


# ---------------------------------------------------------------- popc

STATS_TIMES = re.compile(r"(import|passes|lower\+plan|codegen|write) ([\d.]+)s")
STATS_COUNTS = re.compile(r"(\d+) IR ops, (\d+) vertex types, (\d+) vertices; exchange per run: (\d+) copies, "
                          r"(\d+) bytes\n(\d+) bytes")


def bench_compile(popc, model, popef, args):
    cmd = [popc, model, "-o", popef, "--stats"]
    run(cmd)  # warm-up: page cache, libLLVM mapped
    walls, out = [], ""
    for _ in range(args.repeats):
        out, wall = run(cmd)
        walls.append(wall)
    res = {"wall_s": walls, "median_ms": 1e3 * median(walls), "phases_s": {}}
    for name, secs in STATS_TIMES.findall(out):
        res["phases_s"][name] = float(secs)
    m = STATS_COUNTS.search(out)
    if m:
        res.update(ir_ops=int(m[1]), vertex_types=int(m[2]), vertices=int(m[3]),
                   exchange_copies=int(m[4]), exchange_bytes=int(m[5]), popef_bytes=int(m[6]))
    return res


REPORT = {
    "run": re.compile(r"JIT ([\d.]+) s, run ([\d.]+) s \(([\d.]+) ms/iteration\)"),
    "load": re.compile(r"load ([\d.]+) s"),
    "cycles": re.compile(r"per iteration (\d+)"),
    "clock": re.compile(r"at ([\d.]+) GHz"),
    "phase_cycles": re.compile(r"^\s+(compute|exchange|sync|host)\s+(\d+)", re.M),
    "phase_seconds": re.compile(r"run by phase: compute ([\d.]+) s, exchange ([\d.]+) s, host ([\d.]+) s"),
}


def poprun(poprun_bin, popef, inputs, outputs, iterations, threads, extra=()):
    cmd = [poprun_bin, popef, "--inputs", inputs, "--outputs", outputs,
           "--iterations", str(iterations), "--threads", str(threads), "--report", *extra]
    out, wall = run(cmd)
    m = REPORT["run"].search(out)
    c = REPORT["cycles"].search(out)
    if not m or not c:
        raise RuntimeError(f"poprun-lite --report output not understood:\n{out}")
    ps = REPORT["phase_seconds"].search(out)
    return {
        "iterations": iterations, "process_s": wall,
        # The report prints run time as "X.XXX s (Y.YYY ms/iteration)": take whichever
        # of the two is the finer clock for this iteration count.
        "jit_s": float(m[1]),
        "run_s": float(m[3]) * iterations / 1e3 if iterations < 1000 else float(m[2]),
        "load_s": float(REPORT["load"].search(out)[1]),
        "cycles_per_iteration": int(c[1]),
        "phase_cycles": {k: int(v) // iterations for k, v in REPORT["phase_cycles"].findall(out)},
        "phase_seconds": dict(zip(["compute", "exchange", "host"], map(float, ps.groups()))) if ps else {},
    }


def bench_poprun(poprun_bin, popef, inputs, outputs, clock_hz, args):
    w = args.warmup
    first = poprun(poprun_bin, popef, inputs, outputs, 1, args.threads)
    # Calibrate N so one measured run takes about --target-seconds (the report prints
    # run time in ms, so short runs would be quantised).
    probe = poprun(poprun_bin, popef, inputs, outputs, w + 50, args.threads)
    per = max((probe["run_s"] - first["run_s"]) / (w + 49), 1e-6)
    n = args.iterations or int(min(200000, max(50, args.target_seconds / per)))
    per_iteration, big = [], None
    for _ in range(args.repeats):
        small = poprun(poprun_bin, popef, inputs, outputs, w, args.threads)
        big = poprun(poprun_bin, popef, inputs, outputs, w + n, args.threads)
        per_iteration.append((big["run_s"] - small["run_s"]) / n)
    cycles = big["cycles_per_iteration"]
    return {
        "iterations": n, "warmup": w, "ms_per_iteration": [1e3 * x for x in per_iteration],
        "median_ms": 1e3 * median(per_iteration),
        "first_iteration_ms": 1e3 * first["run_s"], "jit_s": big["jit_s"], "load_s": big["load_s"],
        "cycles_per_iteration": cycles, "ipu_ms": 1e3 * cycles / clock_hz,
        "phase_cycles": big["phase_cycles"],
        "phase_seconds_fraction": {k: v / big["run_s"] for k, v in big["phase_seconds"].items()}
        if big["run_s"] > 0 else {},
        "outputs": load_npz(outputs),
    }


def clock_of(popef_info, popef):
    out, _ = run([popef_info, "--json", popef])
    return int(json.loads(out)["target"]["clock_hz"])


# ---------------------------------------------------------------- PyTorch (worker process)

def torch_worker(spec_path):
    """Runs in its own process (so torch's OpenMP threads never share a process with the
    other measurements); prints one JSON line."""
    with open(spec_path) as f:
        spec = json.load(f)
    try:
        import torch
    except ImportError as e:
        print(json.dumps({"ok": False, "error": f"torch not importable: {e}"}))
        return
    sys.path.insert(0, SAMPLES_DIR)
    import generate  # samples/generate.py: the modules the samples were exported from

    torch.set_num_threads(spec["threads"])
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    # Same seed and construction order as generate.generate(), so the weights are the
    # exported ones (checked against expected.npz by the caller).
    torch.manual_seed(generate.SEED)
    model, input_shapes = generate.SAMPLES[spec["sample"]]()
    model.eval()
    arrays = load_npz(spec["inputs"])
    feeds = [torch.from_numpy(arrays[k]) for k in input_shapes]

    def time_runs(n):
        t0 = time.perf_counter()
        for _ in range(n):
            model(*feeds)
        return (time.perf_counter() - t0) * 1e3

    with torch.inference_mode():
        for _ in range(max(1, spec["warmup"])):
            out = model(*feeds)
        iterations = spec["iterations"]
        if not iterations:
            per = max(time_runs(10) / 10, 1e-4)
            iterations = int(min(100000, max(10, spec["target_seconds"] * 1e3 / per)))
        per_iteration = [time_runs(iterations) / iterations for _ in range(spec["repeats"])]
    print(json.dumps({"ok": True, "version": torch.__version__, "iterations": iterations,
                      "ms_per_iteration": per_iteration,
                      "outputs": {"output": out.numpy().tolist()}}))


def bench_torch(model, inputs, tmp, args):
    sample = sample_name(model)
    if args.no_torch:
        return {"na": "disabled (--no-torch)"}
    if sample is None:
        return {"na": "not a sample: no ONNX->PyTorch converter"}
    spec = os.path.join(tmp, "torch_spec.json")
    with open(spec, "w") as f:
        json.dump({"sample": sample, "inputs": inputs, "threads": args.threads, "warmup": args.warmup,
                   "repeats": args.repeats, "iterations": args.iterations,
                   "target_seconds": args.target_seconds}, f)
    try:
        out, _ = run([sys.executable, os.path.abspath(__file__), "--torch-worker", spec])
        res = json.loads(out.strip().splitlines()[-1])
    except (RuntimeError, ValueError, IndexError) as e:
        return {"na": f"PyTorch failed: {e}"}
    if not res["ok"]:
        return {"na": res["error"]}
    res["median_ms"] = median(res["ms_per_iteration"])
    res["outputs"] = {k: np.asarray(v, dtype=np.float32) for k, v in res["outputs"].items()}
    return res


# ---------------------------------------------------------------- ONNX Runtime (node)

def ort_available():
    """None if node and onnxruntime-node are there, else why not."""
    if shutil.which("node") is None:
        return "node not on PATH"
    if not os.path.isdir(os.path.join(BENCH_DIR, "node_modules", "onnxruntime-node")):
        return "onnxruntime-node not installed (cd bench && npm install --ignore-scripts)"
    return None


def write_ort_spec(model, inputs, tmp, args, name="ort_spec.json"):
    """Writes the inputs as raw buffers and the JSON spec ort_bench.js reads; returns its path.
    args needs threads, warmup, repeats, iterations, target_seconds."""
    in_dir, out_dir = os.path.join(tmp, "ort_in"), os.path.join(tmp, "ort_out")
    os.makedirs(in_dir, exist_ok=True)
    os.makedirs(out_dir, exist_ok=True)
    descs = []
    for i, (name_, a) in enumerate(sorted(load_npz(inputs).items())):
        a = np.ascontiguousarray(a)
        path = os.path.join(in_dir, f"{i}.bin")
        a.astype(a.dtype.newbyteorder("<")).tofile(path)
        descs.append({"name": name_, "dtype": "bool" if a.dtype == np.bool_ else a.dtype.name,
                      "shape": list(a.shape), "file": path})
    spec = os.path.join(tmp, name)
    with open(spec, "w") as f:
        json.dump({"model": os.path.abspath(model), "threads": args.threads, "warmup": args.warmup,
                   "repeats": args.repeats, "iterations": args.iterations,
                   "target_seconds": args.target_seconds, "inputs": descs, "outputs_dir": out_dir}, f)
    return spec


def parse_ort_result(stdout):
    """ort_bench.js's JSON line, with the outputs read back as arrays; raises ValueError."""
    try:
        res = json.loads(stdout.strip().splitlines()[-1])
    except IndexError:
        raise ValueError("no output from ort_bench.js")
    if not res["ok"]:
        return res
    outs = {}
    for o in res["outputs"]:
        if o["dtype"] in ("float32", "float64", "int32", "int64", "int8", "uint8", "int16"):
            outs[o["name"]] = np.fromfile(o["file"], dtype=np.dtype(o["dtype"]).newbyteorder("<")).reshape(o["shape"])
    res["outputs"] = outs
    return res


def bench_ort(model, inputs, tmp, args):
    if args.no_ort:
        return {"na": "disabled (--no-ort)"}
    missing = ort_available()
    if missing:
        return {"na": missing}
    spec = write_ort_spec(model, inputs, tmp, args)
    try:
        out, _ = run([shutil.which("node"), os.path.join(BENCH_DIR, "ort_bench.js"), spec])
        res = parse_ort_result(out)
    except (RuntimeError, ValueError) as e:
        return {"na": f"ORT failed: {e}"}
    if not res["ok"]:
        return {"na": res["error"]}
    res["median_ms"] = median(res["ms_per_iteration"])
    return res


# ---------------------------------------------------------------- table

def fmt_ms(x, digits=3):
    if x is None:
        return "n/a"
    while digits < 6 and 0 < abs(x) < 10 ** (1 - digits):  # keep two significant digits
        digits += 1
    return f"{x:.{digits}f}"


def markdown(headers, rows):
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(headers), sep] + [line(r) for r in rows])


def pct(part, total):
    return f"{100.0 * part / total:.0f}" if total else "-"


def render(machine, results, args):
    out = [f"machine: {machine['cpu']}, nproc {machine['nproc']}, {machine['memory']}, "
           f"Linux {machine['kernel']}; popc {machine['popc']} from {machine['bin_dir']} (repo at {machine['commit']}); "
           f"threads {args.threads}; torch {machine.get('torch', 'n/a')}; "
           f"onnxruntime-node {machine.get('ort', 'n/a')}; 1-min load average {machine['load_before']} "
           f"before, {machine['load_after']} after",
           f"timing: median of {args.repeats} repeats after {args.warmup} warm-up iterations; "
           "ms per inference unless noted", ""]
    rows = []
    for r in results:
        rows.append([r["name"], fmt_ms(r["compile"]["median_ms"], 1), fmt_ms(r["poprun"]["median_ms"]),
                     fmt_ms(r["torch"].get("median_ms")), fmt_ms(r["ort"].get("median_ms")),
                     str(r["poprun"]["cycles_per_iteration"]), fmt_ms(r["poprun"]["ipu_ms"], 4)])
    out.append(markdown(["model", "popc compile (ms)", "poprun-lite", "PyTorch CPU", "ORT CPU",
                         "IPU cycles", "IPU model"], rows))
    out += ["", "where the time goes:", ""]
    rows = []
    for r in results:
        p, c = r["poprun"], r["compile"]
        pc = p["phase_cycles"]
        total = sum(pc.values())
        cyc = "/".join(pct(pc.get(k, 0), total) for k in ("compute", "exchange", "sync", "host"))
        ws = p["phase_seconds_fraction"]
        wall = "/".join(f"{100 * ws.get(k, 0):.0f}" for k in ("compute", "exchange", "host"))
        ph = c["phases_s"]
        comp = "/".join(f"{1e3 * ph.get(k, 0):.0f}" for k in ("import", "passes", "lower+plan", "codegen", "write"))
        xb = f"{c['exchange_bytes'] / 1e6:.2f}" if "exchange_bytes" in c else "?"
        rows.append([r["name"], str(c.get("vertices", "?")), str(c.get("exchange_copies", "?")), xb, cyc, wall,
                     fmt_ms(p["first_iteration_ms"], 2), f"{1e3 * p['jit_s']:.0f}", comp, r["check"]])
    out.append(markdown(["model", "vertices", "exch. copies", "exch. MB", "cycles % c/x/s/h", "run wall % c/x/h",
                         "1st run ms", "JIT ms", "compile ms imp/pass/lower/cg/write", "max abs diff popc/torch/ort"], rows))
    notes = []
    for r in results:
        for tool in ("torch", "ort"):
            if "na" in r[tool]:
                notes.append(f"{r['name']}: {'PyTorch' if tool == 'torch' else 'ORT'} n/a: {r[tool]['na']}")
    if notes:
        out += [""] + notes
    return "\n".join(out)


# ---------------------------------------------------------------- main

def parse_model_arg(arg):
    model, _, inputs = arg.partition(":")
    if not inputs:
        inputs = os.path.join(os.path.dirname(model), "inputs.npz")
    for p in (model, inputs):
        if not os.path.isfile(p):
            sys.exit(f"bench: {p} not found (give MODEL.onnx[:INPUTS.npz]; inputs default to inputs.npz beside the model)")
    return model, inputs


def display_name(model):
    """Sample name, else the model's folder name for .../NAME/model.onnx, else the file stem."""
    s = sample_name(model)
    if s:
        return s
    base = os.path.basename(model)
    if base == "model.onnx" and os.path.dirname(os.path.abspath(model)) != "/":
        return os.path.basename(os.path.dirname(os.path.abspath(model)))
    return os.path.splitext(base)[0]


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--torch-worker":
        return torch_worker(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("models", nargs="*", help="MODEL.onnx[:INPUTS.npz] (default: samples/mlp and samples/cnn)")
    ap.add_argument("--threads", type=int, default=2, help="host threads for every runtime (default 2)")
    ap.add_argument("--repeats", type=int, default=5, help="measurements per figure; the median is shown (default 5)")
    ap.add_argument("--warmup", type=int, default=5, help="warm-up inferences before timing (default 5)")
    ap.add_argument("--iterations", type=int, default=0,
                    help="inferences per measurement (default: calibrated to --target-seconds)")
    ap.add_argument("--target-seconds", type=float, default=0.3, help="calibrated measurement length (default 0.3)")
    ap.add_argument("--bin-dir", default=os.environ.get("POPC_BIN_DIR", os.path.join(REPO, "build", "bin")),
                    help="where popc-onnx, poprun-lite, popef-info are (default: $POPC_BIN_DIR or build/bin)")
    ap.add_argument("--no-torch", action="store_true", help="skip PyTorch")
    ap.add_argument("--no-ort", action="store_true", help="skip ONNX Runtime")
    ap.add_argument("--json", help="also write every raw number to this file")
    args = ap.parse_args()
    if args.threads < 1 or args.repeats < 1 or args.warmup < 1:
        sys.exit("bench: --threads, --repeats and --warmup must be at least 1")

    popc = find_bin(args.bin_dir, "popc-onnx")
    poprun_bin = find_bin(args.bin_dir, "poprun-lite")
    popef_info = find_bin(args.bin_dir, "popef-info")
    models = [parse_model_arg(a) for a in (args.models or [os.path.join(REPO, m) for m in DEFAULT_MODELS])]

    machine = machine_description(args.threads)
    machine["commit"] = git_commit()
    machine["bin_dir"] = os.path.abspath(args.bin_dir)
    machine["popc"] = run([popc, "--version"])[0].split()[-1]

    machine["load_before"] = loadavg()
    results = []
    with tempfile.TemporaryDirectory(prefix="popc-bench-") as tmp:
        for i, (model, inputs) in enumerate(models):
            name = display_name(model)
            print(f"bench: {name} ...", file=sys.stderr, flush=True)
            mtmp = os.path.join(tmp, str(i))
            os.makedirs(mtmp)
            popef = os.path.join(mtmp, "model.popef")
            r = {"name": name, "model": model, "inputs": inputs}
            r["compile"] = bench_compile(popc, model, popef, args)
            r["poprun"] = bench_poprun(poprun_bin, popef, inputs, os.path.join(mtmp, "out.npz"),
                                       clock_of(popef_info, popef), args)
            r["torch"] = bench_torch(model, inputs, mtmp, args)
            r["ort"] = bench_ort(model, inputs, mtmp, args)
            for tool, key in (("torch", "torch"), ("ort", "ort")):
                if "version" in r[tool]:
                    machine[key] = r[tool]["version"]
            # Correctness guard: a fast wrong answer is not a result. Reference: the
            # sample's expected.npz, else ORT's outputs.
            expected = os.path.join(os.path.dirname(model), "expected.npz")
            ref = load_npz(expected) if os.path.isfile(expected) else r["ort"].get("outputs")
            diffs = {t: max_abs_diff(r[t]["outputs"], ref) if ref and "outputs" in r[t] else None
                     for t in ("poprun", "torch", "ort")}
            r["max_abs_diff"] = diffs
            r["check"] = "/".join("n/a" if diffs[t] is None else f"{diffs[t]:.0e}" for t in ("poprun", "torch", "ort"))
            for t, d in diffs.items():
                if d is not None and d > TOLERANCE:
                    print(f"bench: warning: {name}: {t} output differs from the reference by {d:.3g}",
                          file=sys.stderr)
            results.append(r)

    machine["load_after"] = loadavg()
    text = render(machine, results, args)
    print(text)
    if args.json:
        def strip(o):
            if isinstance(o, dict):
                return {k: strip(v) for k, v in o.items() if k != "outputs"}
            if isinstance(o, list):
                return [strip(v) for v in o]
            return o
        with open(args.json, "w") as f:
            json.dump({"machine": machine, "args": vars(args), "results": strip(results)}, f, indent=2)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""popc (poprun-lite) vs ONNX Runtime vs PyTorch, side by side, same machine, same threads.

    bench/compare.sh [--smoke] [--models a,b,...] [--threads 2] [--json FILE]

For every model of the bench set (samples mlp and cnn, bench/models.py's mlp_wide and cnn_wide,
test/models/export_models.py's models) it measures, each in its own process:

  steady ms       per inference, best of --repeats measurements of ~--target-seconds each.
                  popc: (run(1+N) - run(1)) / N from `poprun-lite --iterations K --report` (warm
                  JIT cache, so load and JIT are excluded); ORT: session.run in a loop
                  (bench/ort_bench.js); PyTorch: the same nn.Module, inference_mode loop.
  start warm      whole-process wall time of `poprun-lite m.popef --inputs --outputs --cache-dir D`
                  with D holding the JIT objects; ORT: a node process that creates the session,
                  runs once and exits; PyTorch: a python process that imports torch, builds the
                  module (random init included), runs once and exits.
  start cold      poprun-lite with an empty --cache-dir (ORT and PyTorch have no JIT cache)
  compile s       `popc-onnx model.onnx -o m.popef --no-cache`, whole process
  sizes           popef MB, the ONNX initializers' MB, and their ratio
  peak RSS        /usr/bin/time's %M of the warm poprun-lite start, the ORT and PyTorch start
                  processes, and popc-onnx compiling
  ratios          popc/ORT and popc/PyTorch (steady), popc/ORT (warm and cold start), geomeans

poprun-lite's outputs are checked against expected.npz beside the export (else ORT's outputs)
with npz-compare (rtol 1e-3, atol 1e-5 x the reference's largest value). Exit status 1 if a
tool failed or an output mismatched; timings never fail the run.
"""
import argparse
import datetime
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace

import numpy as np

import bench  # helpers of bench.py: ORT spec/result, poprun --report parsing, tables
import real_models  # npz-compare tolerances; puts test/models on sys.path
import export_models  # noqa: E402 (found through real_models)

BENCH_DIR, REPO = bench.BENCH_DIR, bench.REPO
SAMPLES = ["mlp", "cnn"]
GENERATED = ["mlp_wide", "cnn_wide"]  # bench/models.py
EXPORTED = list(export_models.MODELS)  # test/models/export_models.py
SMOKE = ["mlp", "cnn", "lstm", "transformer_encoder"]
MB = 1e6

# Measurement effort: the full run vs --smoke (CI: correctness plus a rough table).
FULL = SimpleNamespace(repeats=3, target_seconds=0.75, warmup=3, start_repeats=3, compile_repeats=3)
QUICK = SimpleNamespace(repeats=1, target_seconds=0.05, warmup=1, start_repeats=1, compile_repeats=1)
MAX_ITERATIONS = 1_000_000
TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None  # peak RSS; n/a without it
SLOW_START_S = 10.0  # a cold start this slow is measured once, not start_repeats times


class ToolError(RuntimeError):
    pass


# ---------------------------------------------------------------- processes

def timed(cmd, log_dir, tag):
    """Runs cmd to exit; returns (wall s, peak RSS MB or None, stdout). Raises ToolError on failure.
    The peak RSS comes from /usr/bin/time: Linux carries a process's RSS high-water mark across
    exec, so a child forked from this (by now large) Python process would report at least our
    RSS; /usr/bin/time forks the command from a small process."""
    out_path, err_path, rss_path = (os.path.join(log_dir, f"{tag}.{s}") for s in ("out", "err", "rss"))
    wrapped = [TIME, "-f", "%M", "-o", rss_path, *cmd] if TIME else cmd
    with open(out_path, "w") as out, open(err_path, "w") as err:
        t0 = time.perf_counter()
        rc = subprocess.run(wrapped, stdout=out, stderr=err, stdin=subprocess.DEVNULL).returncode
        wall = time.perf_counter() - t0
    stdout, stderr = read_text(out_path), read_text(err_path)
    if rc != 0:
        raise ToolError(f"{os.path.basename(cmd[0])} exit {rc}: {real_models.first_error(stderr or stdout)}")
    rss_kib = read_text(rss_path).split()[-1] if TIME else None  # the last line is %M
    return wall, rss_kib and int(rss_kib) * 1024 / MB, stdout


def read_text(path):
    with open(path) as f:
        return f.read()


def best_of(n, fn):
    """Runs fn() n times; returns (min wall, max RSS, every (wall, rss))."""
    samples = [fn()[:2] for _ in range(n)]
    rss = [r for _, r in samples if r is not None]
    return min(w for w, _ in samples), max(rss) if rss else None, samples


# ---------------------------------------------------------------- models

def bench_set(work):
    """name -> model description, in table order."""
    models = {}
    for name in SAMPLES:
        d = os.path.join(REPO, "samples", name)
        models[name] = dict(dir=d, torch=("sample", name))
    for name in GENERATED:
        models[name] = dict(dir=os.path.join(work, name), torch=("generated", name))
    for name in EXPORTED:
        models[name] = dict(dir=os.path.join(work, name), torch=("exported", name))
    for name, m in models.items():
        m.update(name=name, onnx=os.path.join(m["dir"], "model.onnx"), inputs=os.path.join(m["dir"], "inputs.npz"),
                 expected=os.path.join(m["dir"], "expected.npz"))
    return models


def ensure_exported(models, work):
    """Generates/exports the models missing from work; existing exports are reused."""
    gen = [n for n in models if n in GENERATED and not os.path.isfile(models[n]["inputs"])]
    exp = [n for n in models if n in EXPORTED and not os.path.isfile(models[n]["expected"])]
    jobs = [(gen, [os.path.join(BENCH_DIR, "models.py"), work]),
            (exp, [os.path.join(REPO, "test", "models", "export_models.py"), work, *exp])]
    for names, cmd in jobs:
        if names:
            log(f"exporting {', '.join(names)} into {work}")
            p = subprocess.run([sys.executable, *cmd], capture_output=True, text=True)
            if p.returncode:  # torch.onnx's warnings only matter when it fails
                sys.exit(f"compare: {' '.join(cmd)} failed:\n{p.stderr}")


def weight_bytes(onnx_path):
    """Sum of the ONNX initializers' bytes (what any runtime must hold)."""
    import onnx
    from onnx import numpy_helper
    proto = onnx.load(onnx_path)
    return sum(numpy_helper.to_array(t).nbytes for t in proto.graph.initializer)


# ---------------------------------------------------------------- popc

def popc_compile(tools, m, scratch, cfg):
    popef = os.path.join(scratch, "model.popef")
    cmd = [tools.popc, m["onnx"], "-o", popef, "--no-cache"]
    wall, rss, samples = best_of(cfg.compile_repeats, lambda: timed(cmd, scratch, "compile"))
    return popef, {"wall_s": wall, "rss_mb": rss, "samples": samples, "popef_bytes": os.path.getsize(popef)}


def poprun_start(tools, popef, m, scratch, cache, threads):
    """The one-shot command a user runs: load, JIT (or cache hit), one inference, write outputs."""
    cmd = [tools.poprun, popef, "--inputs", m["inputs"], "--outputs", os.path.join(scratch, "out.npz"),
           "--threads", str(threads), "--cache-dir", cache]
    return timed(cmd, scratch, "poprun")


def popc_starts(tools, popef, m, scratch, cache, cfg, threads):
    """Cold starts (fresh cache dirs; the first one warms `cache`), then warm starts from `cache`.
    Each start writes scratch/out.npz, which check_outputs compares."""
    cold = [poprun_start(tools, popef, m, scratch, cache, threads)[:2]]
    warmed_at = time.monotonic()
    n_cold = 1 if cold[0][0] > SLOW_START_S else cfg.start_repeats
    for i in range(1, n_cold):
        fresh = os.path.join(scratch, f"cold-cache-{i}")
        cold.append(poprun_start(tools, popef, m, scratch, fresh, threads)[:2])
        shutil.rmtree(fresh, ignore_errors=True)
    # Cache entries younger than 2 s are re-hashed on every read (docs/cache.md, "Hits
    # without re-hashing"); a real warm start finds settled entries.
    time.sleep(max(0.0, 2.1 - (time.monotonic() - warmed_at)))
    warm = best_of(cfg.start_repeats, lambda: poprun_start(tools, popef, m, scratch, cache, threads))
    return {"cold_s": min(w for w, _ in cold), "cold_samples": cold,
            "warm_s": warm[0], "warm_rss_mb": warm[1], "warm_samples": warm[2]}


def popc_steady(tools, popef, m, scratch, cache, cfg, threads, first_run_s):
    """Best of cfg.repeats values of (run(1+N) - run(1)) / N, in-process run time from --report.
    N is calibrated on run(1+N) alone: run(1+N) / (1+N) over-estimates an iteration (the first
    is cold), so N only grows towards the target and never overshoots it."""
    out = os.path.join(scratch, "steady-out.npz")

    def run_s(k):
        return bench.poprun(tools.poprun, popef, m["inputs"], out, k, threads, ["--cache-dir", cache])["run_s"]

    n = clamp_iterations(cfg.target_seconds / max(first_run_s, 1e-6))
    per, spans, calibrations = [], [], 0
    while len(per) < cfg.repeats:
        big = run_s(1 + n)
        if big < cfg.target_seconds / 2 and n < MAX_ITERATIONS and calibrations < 6:
            n = clamp_iterations(max(2 * n, cfg.target_seconds * (1 + n) / max(big, 1e-6)))
            calibrations += 1
            continue
        span = big - run_s(1)
        per.append(1e3 * span / n)
        spans.append(span)
    return {"ms": min(per), "ms_samples": per, "iterations": n, "span_s": spans}


def clamp_iterations(n):
    return int(min(MAX_ITERATIONS, max(2, round(n))))


def popc_check(tools, m, scratch, reference):
    """npz-compare of poprun-lite's outputs (of the last start) against the reference."""
    actual = os.path.join(scratch, "out.npz")
    if reference is None:
        return {"status": "unchecked", "detail": "no reference (no expected.npz, ORT n/a)"}
    diff = bench.max_abs_diff(bench.load_npz(actual), bench.load_npz(reference))
    p = subprocess.run([tools.compare, actual, reference, *real_models.compare_tolerances(reference)],
                       capture_output=True, text=True)
    status = "ok" if p.returncode == 0 else "MISMATCH"
    return {"status": status, "max_abs_diff": diff, "reference": reference,
            "detail": (p.stdout + p.stderr).strip()[:400] if p.returncode else ""}


def bench_popc(tools, m, scratch, cfg, threads, res):
    """Fills res step by step, so a later failure keeps the earlier figures (e.g. compile)."""
    popef, res["compile"] = popc_compile(tools, m, scratch, cfg)
    cache = os.path.join(scratch, "jit-cache")
    res["start"] = popc_starts(tools, popef, m, scratch, cache, cfg, threads)
    first = bench.poprun(tools.poprun, popef, m["inputs"], os.path.join(scratch, "probe.npz"), 1, threads,
                         ["--cache-dir", cache])
    res["steady"] = popc_steady(tools, popef, m, scratch, cache, cfg, threads, first["run_s"])
    res["cycles_per_iteration"] = first["cycles_per_iteration"]


# ---------------------------------------------------------------- ONNX Runtime (node)

def bench_ort(m, scratch, cfg, threads):
    missing = bench.ort_available()
    if missing:
        return {"na": missing}
    node, script = shutil.which("node"), os.path.join(BENCH_DIR, "ort_bench.js")
    steady_args = SimpleNamespace(threads=threads, warmup=cfg.warmup, repeats=cfg.repeats, iterations=0,
                                  target_seconds=cfg.target_seconds)
    res = ort_result(timed([node, script, bench.write_ort_spec(m["onnx"], m["inputs"], scratch, steady_args)],
                           scratch, "ort-steady")[2])
    # A start is one node process: require, create the session, run once, write outputs, exit.
    start_args = SimpleNamespace(threads=threads, warmup=1, repeats=0, iterations=1, target_seconds=0)
    start_spec = bench.write_ort_spec(m["onnx"], m["inputs"], scratch, start_args, name="ort_start.json")

    def start():
        wall, rss, out = timed([node, script, start_spec], scratch, "ort-start")
        ort_result(out)
        return wall, rss

    wall, rss, samples = best_of(cfg.start_repeats, start)
    reference = os.path.join(scratch, "ort-outputs.npz")
    np.savez(reference, **res["outputs"])
    return {"version": res["version"], "ms": min(res["ms_per_iteration"]), "ms_samples": res["ms_per_iteration"],
            "iterations": res["iterations"], "start_s": wall, "rss_mb": rss, "start_samples": samples,
            "outputs_npz": reference}


def ort_result(stdout):
    try:
        res = bench.parse_ort_result(stdout)
    except ValueError as e:
        raise ToolError(f"ort_bench.js: {e}") from None
    if not res["ok"]:
        raise ToolError(f"ORT: {res['error']}")
    return res


# ---------------------------------------------------------------- PyTorch (worker processes)

def build_torch_module(kind, name):
    """(module in eval mode, output names) with the seeds the ONNX file was exported with."""
    import torch
    if kind == "sample":
        sys.path.insert(0, os.path.join(REPO, "samples"))
        import generate
        torch.manual_seed(generate.SEED)
        module, _ = generate.SAMPLES[name]()
        names = ["output"]
    elif kind == "generated":
        import models  # bench/models.py: seeds 0 per model, as its main()
        torch.manual_seed(0)
        module, _ = models.MODELS[name]()
        names = ["output"]
    else:
        module, _, _ = export_models.build(name)
        names = None  # from the number of outputs, as export_models.export
    return module.eval(), names


def torch_worker(mode, spec):
    """mode 'start': build, run once, exit (timed from outside). mode 'steady': time the loop,
    print JSON, write outputs for the rebuild check."""
    import torch
    torch.set_num_threads(spec["threads"])
    torch.set_num_interop_threads(1)
    module, names = build_torch_module(spec["kind"], spec["name"])
    with np.load(spec["inputs"]) as z:
        feeds = [torch.from_numpy(z[k]) for k in z.files]  # npz keeps the graph's input order
    with torch.inference_mode():
        outs = module(*feeds)
        if mode == "start":
            return
        for _ in range(spec["warmup"]):
            module(*feeds)

        def loop(n):
            t0 = time.perf_counter()
            for _ in range(n):
                module(*feeds)
            return time.perf_counter() - t0

        n = clamp_iterations(spec["target_seconds"] / max(loop(1), 1e-7))
        ms = [1e3 * loop(n) / n for _ in range(spec["repeats"])]
    outs = outs if isinstance(outs, tuple) else (outs,)
    names = names or export_models.output_names(outs)
    np.savez(spec["outputs"], **{k: o.numpy() for k, o in zip(names, outs)})
    print(json.dumps({"version": torch.__version__, "iterations": n, "ms_samples": ms}))


def bench_torch(m, scratch, cfg, threads):
    spec = {"kind": m["torch"][0], "name": m["name"], "inputs": m["inputs"], "threads": threads,
            "warmup": cfg.warmup, "repeats": cfg.repeats, "target_seconds": cfg.target_seconds,
            "outputs": os.path.join(scratch, "torch-outputs.npz")}
    spec_path = os.path.join(scratch, "torch_spec.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    worker = [sys.executable, os.path.abspath(__file__), "--torch-worker"]
    res = json.loads(timed(worker + ["steady", spec_path], scratch, "torch-steady")[2].strip().splitlines()[-1])
    wall, rss, samples = best_of(cfg.start_repeats, lambda: timed(worker + ["start", spec_path], scratch, "torch-start"))
    return {"version": res["version"], "ms": min(res["ms_samples"]), "ms_samples": res["ms_samples"],
            "iterations": res["iterations"], "start_s": wall, "rss_mb": rss, "start_samples": samples,
            "outputs_npz": spec["outputs"]}


# ---------------------------------------------------------------- one model

def bench_model(tools, m, work, cfg, threads):
    """Every measurement of one model; a failing tool is recorded, the others still run."""
    scratch = tempfile.mkdtemp(prefix=f"compare-{m['name']}-", dir=work)
    r = {"name": m["name"], "onnx": m["onnx"], "errors": {}, "load_average_before": os.getloadavg()[0],
         "weight_bytes": weight_bytes(m["onnx"]), "onnx_bytes": os.path.getsize(m["onnx"])}
    try:
        steps = (("ort", lambda res: res.update(bench_ort(m, scratch, cfg, threads))),
                 ("popc", lambda res: bench_popc(tools, m, scratch, cfg, threads, res)),
                 ("torch", lambda res: res.update(bench_torch(m, scratch, cfg, threads))))
        for tool, step in steps:
            t0 = time.perf_counter()
            r[tool] = {}
            try:
                step(r[tool])
            except (RuntimeError, subprocess.SubprocessError, OSError, ValueError) as e:  # ToolError too
                r["errors"][tool] = str(e)
            log(f"{m['name']}: {tool} {'FAILED' if tool in r['errors'] else 'done'} "
                f"({time.perf_counter() - t0:.1f} s)")
        r["check"] = check_outputs(tools, m, r, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # popefs and JIT caches are big (ResNet-50: 0.4 GB)
    return r


def check_outputs(tools, m, r, scratch):
    """poprun-lite vs expected.npz (else ORT); also whether the rebuilt PyTorch module is the
    exported one (else its timings are of another model)."""
    reference = m["expected"] if os.path.isfile(m["expected"]) else r["ort"].get("outputs_npz")
    check = {"popc": popc_check(tools, m, scratch, reference) if "start" in r["popc"]
             else {"status": "error", "detail": r["errors"].get("popc", "")}}
    if reference and "outputs_npz" in r["torch"]:
        ref, got = bench.load_npz(reference), bench.load_npz(r["torch"]["outputs_npz"])
        atol = float(real_models.compare_tolerances(reference)[3])
        same = set(ref) == set(got) and all(np.allclose(got[k], ref[k], rtol=1e-3, atol=atol) for k in ref)
        check["torch"] = {"status": "ok" if same else "MISMATCH", "max_abs_diff": bench.max_abs_diff(got, ref)}
    for tool, c in check.items():
        if c["status"] == "MISMATCH":
            log(f"*** {m['name']}: {tool} outputs DO NOT MATCH {reference}: {c.get('detail', '')}")
    return check


# ---------------------------------------------------------------- report

def ratio(a, b):
    return a / b if a is not None and b else None


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def fmt(x, digits=2):
    return "n/a" if x is None else f"{x:.{digits}f}"


def fmt_mb(nbytes):
    return "n/a" if nbytes is None else f"{nbytes / MB:.3g}"


def fmt_ratio(x):
    return "n/a" if x is None else f"{x:.2f}x"


def get(r, tool, *keys):
    v = r.get(tool, {})
    for k in keys:
        v = v.get(k) if isinstance(v, dict) else None
    return v


def check_cell(r):
    c = r["check"]["popc"]
    if c["status"] == "ok":
        return f"ok ({c['max_abs_diff']:.0e})"
    return {"MISMATCH": "**MISMATCH**", "error": "**error**"}.get(c["status"], c["status"])


def ratios(r):
    popc_start = get(r, "popc", "start")
    return {
        "steady_popc_over_ort": ratio(get(r, "popc", "steady", "ms"), get(r, "ort", "ms")),
        "steady_popc_over_torch": ratio(get(r, "popc", "steady", "ms"), get(r, "torch", "ms")),
        "warm_start_popc_over_ort": ratio(popc_start and popc_start["warm_s"], get(r, "ort", "start_s")),
        "cold_start_popc_over_ort": ratio(popc_start and popc_start["cold_s"], get(r, "ort", "start_s")),
    }


def steady_table(results):
    rows = []
    for r in results:
        q = r["ratios"]
        rows.append([r["name"], fmt(get(r, "popc", "steady", "ms"), 3), fmt(get(r, "ort", "ms"), 3),
                     fmt(get(r, "torch", "ms"), 3), fmt_ratio(q["steady_popc_over_ort"]),
                     fmt_ratio(q["steady_popc_over_torch"]), check_cell(r), f"{r['load_average_before']:.1f}"])
    rows.append(["**geomean**", "", "", "", fmt_ratio(geomean(r["ratios"]["steady_popc_over_ort"] for r in results)),
                 fmt_ratio(geomean(r["ratios"]["steady_popc_over_torch"] for r in results)), "", ""])
    # load: the 1-min load average when the model's measurements began (2 cores: above ~0.5,
    # other work competes, and PyTorch's spinning OpenMP barriers suffer most).
    return bench.markdown(["model", "popc ms", "ORT ms", "PyTorch ms", "popc/ORT", "popc/PyTorch",
                           "popc output", "load"], rows)


def start_table(results):
    rows = []
    for r in results:
        q, c = r["ratios"], get(r, "popc", "compile") or {}
        popef = c.get("popef_bytes")
        rows.append([r["name"], fmt(get(r, "popc", "start", "warm_s")), fmt(get(r, "popc", "start", "cold_s")),
                     fmt(get(r, "ort", "start_s")), fmt(get(r, "torch", "start_s")),
                     fmt_ratio(q["warm_start_popc_over_ort"]), fmt_ratio(q["cold_start_popc_over_ort"]),
                     fmt(c.get("wall_s")), fmt_mb(popef), fmt_mb(r["weight_bytes"]),
                     fmt_ratio(ratio(popef, r["weight_bytes"])),
                     fmt(get(r, "popc", "start", "warm_rss_mb"), 0), fmt(get(r, "ort", "rss_mb"), 0),
                     fmt(get(r, "torch", "rss_mb"), 0), fmt(c.get("rss_mb"), 0)])
    rows.append(["**geomean**", "", "", "", "",
                 fmt_ratio(geomean(r["ratios"]["warm_start_popc_over_ort"] for r in results)),
                 fmt_ratio(geomean(r["ratios"]["cold_start_popc_over_ort"] for r in results))] + [""] * 8)
    return bench.markdown(["model", "start warm popc s", "start cold popc s", "start ORT s", "start PyTorch s",
                           "warm popc/ORT", "cold popc/ORT", "compile s", "popef MB", "weights MB",
                           "popef/weights", "RSS popc MB", "RSS ORT MB", "RSS PyTorch MB", "RSS popc-onnx MB"],
                          rows)


def render(machine, results, cfg):
    m = machine
    head = [f"machine: {m['cpu']}, nproc {m['nproc']}, {m['memory']}, Linux {m['kernel']}; {m['date']}",
            f"popc {m['popc']} ({m['bin_dir']}), repo {m['commit']}; onnxruntime-node {m.get('ort', 'n/a')}; "
            f"torch {m.get('torch', 'n/a')}; threads {m['threads']} for every runtime",
            f"1-min load average {m['load_before']:.2f} before, {m['load_after']:.2f} after"
            + ("  (busy machine: timings are noisy)" if max(m['load_before'], m['load_after']) > 0.5 else ""),
            f"best of {cfg.repeats} steady measurements of ~{cfg.target_seconds} s; starts best of "
            f"{cfg.start_repeats}; compile best of {cfg.compile_repeats}", ""]
    body = ["steady state, ms per inference (ratio < 1: popc faster):", "", steady_table(results), "",
            "start (whole process, s), compile (whole process, s), sizes, peak RSS:", "", start_table(results)]
    notes = []
    for r in results:
        for tool, err in r["errors"].items():
            notes.append(f"- {r['name']}: {tool} failed: {err}")
        for tool, c in r["check"].items():
            if c["status"] == "MISMATCH":
                notes.append(f"- **{r['name']}: {tool} outputs DO NOT MATCH the reference** "
                             f"(max |diff| {c['max_abs_diff']:.3g}) {c.get('detail', '')}".rstrip())
        if "na" in r.get("ort", {}) and "ort" not in r["errors"]:
            notes.append(f"- {r['name']}: ORT n/a: {r['ort']['na']}")
    return "\n".join(head + body + (["", "problems:"] + notes if notes else []))


# ---------------------------------------------------------------- main

def log(msg):
    print(f"compare: {msg}", file=sys.stderr, flush=True)


def git_commit():
    def git(*a):
        return subprocess.run(["git", "-C", REPO, *a], capture_output=True, text=True).stdout.strip()
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return (git("rev-parse", "--short", "HEAD") or "unknown") + ("+dirty" if dirty else "")


def machine_description(tools, threads):
    m = bench.machine_description(threads)
    m.update(commit=git_commit(), date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
             bin_dir=os.path.abspath(tools.bin_dir), popc=bench.run([tools.popc, "--version"])[0].split()[-1])
    return m


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", help=f"comma-separated subset of: {','.join(SAMPLES + GENERATED + EXPORTED)}")
    ap.add_argument("--smoke", action="store_true",
                    help=f"CI size: {','.join(SMOKE)} (unless --models), one short measurement each")
    ap.add_argument("--threads", type=int, default=2, help="host threads for every runtime (default 2)")
    ap.add_argument("--json", help="write every raw measurement to this file")
    ap.add_argument("--work", default="/tmp/popc-bench",
                    help="exported models (reused) and scratch (default /tmp/popc-bench)")
    ap.add_argument("--bin-dir", default=os.environ.get("POPC_BIN_DIR", os.path.join(REPO, "build", "bin")),
                    help="popc-onnx, poprun-lite, npz-compare (default: $POPC_BIN_DIR or build/bin)")
    ap.add_argument("--repeats", type=int, help="steady and start measurements per figure (default 3, smoke 1)")
    ap.add_argument("--target-seconds", type=float, help="length of one steady measurement (default 0.75)")
    args = ap.parse_args()
    known = SAMPLES + GENERATED + EXPORTED
    args.names = args.models.split(",") if args.models else (SMOKE if args.smoke else known)
    unknown = [n for n in args.names if n not in known]
    if unknown:
        ap.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(known)}")
    if args.threads < 1:
        ap.error("--threads must be at least 1")
    cfg = SimpleNamespace(**vars(QUICK if args.smoke else FULL))
    if args.repeats:
        cfg.repeats = cfg.start_repeats = args.repeats
    if args.target_seconds:
        cfg.target_seconds = args.target_seconds
    return args, cfg


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--torch-worker":
        with open(sys.argv[3]) as f:
            return torch_worker(sys.argv[2], json.load(f))
    args, cfg = parse_args()
    # The user's cache settings would turn cold starts warm and compiles into hits.
    for var in ("POPC_CACHE_DIR", "POPC_REMOTE_CACHE", "POPC_PRELOAD_POPEF", "POPC_LOG_LEVEL"):
        os.environ.pop(var, None)
    tools = SimpleNamespace(bin_dir=args.bin_dir, **{k: bench.find_bin(args.bin_dir, b) for k, b in
                            (("popc", "popc-onnx"), ("poprun", "poprun-lite"), ("compare", "npz-compare"))})
    os.makedirs(args.work, exist_ok=True)
    models = bench_set(args.work)
    models = {n: models[n] for n in args.names}
    ensure_exported(models, args.work)

    machine = machine_description(tools, args.threads)
    machine["load_before"] = os.getloadavg()[0]
    results = []
    for m in models.values():
        r = bench_model(tools, m, args.work, cfg, args.threads)
        r["ratios"] = ratios(r)
        results.append(r)
        for tool, key in (("ort", "ort"), ("torch", "torch")):
            if "version" in r[tool]:
                machine[key] = r[tool]["version"]
    machine["load_after"] = os.getloadavg()[0]

    print(render(machine, results, cfg))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine, "config": vars(cfg), "results": results}, f, indent=2, default=str)
    failed = any(r["errors"] or any(c["status"] in ("MISMATCH", "error") for c in r["check"].values())
                 for r in results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

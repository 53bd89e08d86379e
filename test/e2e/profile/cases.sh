#!/usr/bin/env bash
# Profile end-to-end cases: cases.sh CASE BIN_DIR SOURCE_DIR SCRATCH_DIR
. "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
MLP=$SRC/samples/mlp

# mlp.popef + prof/graph.json (popc-onnx) + prof/execution.json (poprun-lite).
profile_mlp() {
  "$BIN/popc-onnx" "$MLP/model.onnx" -o mlp.popef --profile-dir prof || die "popc-onnx --profile-dir failed"
  [ -s prof/graph.json ] || die "no graph.json"
  if [ "${1:-}" = run ]; then
    "$BIN/poprun-lite" mlp.popef --inputs "$MLP/inputs.npz" --outputs out.npz --iterations 2 --report \
      --profile-dir prof >report.txt || die "poprun-lite --profile-dir failed"
    [ -s prof/execution.json ] || die "no execution.json"
  fi
}

case $CASE in
graph_profile_written)
  profile_mlp
  "$BIN/popef-info" mlp.popef --json --all >info.json || die "popef-info failed"
  "$PY" - <<'PY' || die "graph.json does not match the executable"
import json
g = json.load(open("prof/graph.json")); info = json.load(open("info.json"))
t = g["target"]
assert t["numTiles"] == t["numIPUs"] * t["tilesPerIPU"] == info["target"]["num_ipus"] * info["target"]["tiles_per_ipu"]
assert t["bytesPerTile"] == info["target"]["bytes_per_tile"]
assert g["graph"]["numVertices"] == sum(c["vertices"] for c in info["compute_sets"]), g["graph"]
assert g["graph"]["numComputeSets"] == len(info["compute_sets"])
assert g["graph"]["numVars"] == len(info["tensors"])
cs = g["computeSets"]
for i, c in enumerate(info["compute_sets"]):
    assert cs["names"][i] == c["name"]
    assert sum(cs["vertexCounts"][i]) == c["vertices"] == sum(cs["vertexCountsByTile"][i])
    assert sum(1 for v in cs["vertexCountsByTile"][i] if v) == c["tiles"]
# Bytes per tile (including gaps) are the popef's planned tile_bytes_used.
assert sum(g["memory"]["byTile"]["totalIncludingGaps"]) == info["memory"]["total_bytes"]
assert max(g["memory"]["byTile"]["totalIncludingGaps"]) == info["memory"]["max_bytes"]
total = g["memory"]["byTile"]["total"]
cats = g["memory"]["byCategory"]
assert all(sum(c["nonInterleaved"]["nonOverlapped"][i] for c in cats.values()) <= total[i] for i in range(len(total)))
# Exchanges: every popef exchange is internal or external, with its bytes.
n = len(g["exchanges"]["names"]) + len(g["externalExchanges"]["names"])
assert n == len(info["exchanges"])
for lst in (g["exchanges"], g["externalExchanges"]):
    for k, e in enumerate(lst["popefIndex"]):
        # A byte read by several tiles leaves its tile once (the exchange multicasts).
        assert lst["totalData"][k] == info["exchanges"][e]["bytes"] == sum(lst["bytesReceivedByTile"][k]) >= sum(lst["bytesSentByTile"][k])
assert len(g["hostExchanges"]["names"]) == len(info["streams"])
types = {p["type"] for p in g["programs"]}
assert g["programs"][0]["type"] == "Sequence" and "OnTileExecute" in types and "StreamCopy" in types, types
assert types <= {"Sequence", "OnTileExecute", "DoExchange", "GlobalExchange", "StreamCopy", "Repeat", "Call", "Sync"}
live = g["memory"]["liveness"]
assert live["numSteps"] == len(live["steps"]) > 0
leaves = [i for i, p in enumerate(g["programs"]) if "children" not in p]
assert [s["program"] for s in live["steps"]] == leaves
assert live["maxLiveBytes"] >= live["alwaysLiveBytes"] > 0
assert len(g["ir"]["ops"]) > 0 and all("type" in op for op in g["ir"]["ops"])
PY
  ;;
graph_profile_deterministic)
  "$BIN/popc-onnx" "$MLP/model.onnx" -o a.popef --profile-dir a || die "compile a"
  "$BIN/popc-onnx" "$MLP/model.onnx" -o b.popef --profile-dir b || die "compile b"
  cmp a/graph.json b/graph.json || die "two graph profiles differ"
  cmp a.popef b.popef || die "--profile-dir changed the executable"
  "$BIN/popc-onnx" "$MLP/model.onnx" -o c.popef || die "compile c"
  cmp a.popef c.popef || die "--profile-dir changed the executable"
  ;;
execution_profile_matches_report)
  profile_mlp run
  want=$(sed -n 's/.*cycles total \([0-9]*\) over.*/\1/p' report.txt)
  [ -n "$want" ] || { cat report.txt; die "no cycle total in --report"; }
  "$PY" - "$want" <<'PY' || die "execution.json does not match --report"
import json, sys
x = json.load(open("prof/execution.json")); g = json.load(open("prof/graph.json"))
s = x["simulation"]
assert s["cycles"] == int(sys.argv[1]), (s["cycles"], sys.argv[1])
assert sum(s["phaseCycles"].values()) == s["cycles"]
assert s["steps"][-1]["cyclesTo"] == s["cycles"]
prev = 0
for st in s["steps"]:
    assert st["cyclesFrom"] == prev and st["cyclesTo"] == prev + st["cycles"], st
    prev = st["cyclesTo"]
    if st["type"] != "Sync":
        assert 0 <= st["tileBalance"] <= 1 and 0 <= st["activeTileBalance"] <= 1
        assert g["programs"][st["program"]]["type"] == st["type"]
    if st["type"] == "OnTileExecute":
        assert 0 < st["threadBalance"] <= 1 and st["cyclesOverlapped"] == 0
    if "totalData" in st:
        assert 0 <= st["dataBalance"] <= 1
# Two iterations: main ran twice.
assert x["programTrace"].count(0) == 2
assert sum(s["computeSetRuns"]) == 2 * sum(1 for p in g["programs"] if p["type"] == "OnTileExecute")
assert s["tileCycles"]["activeCompute"] <= s["tileCycles"]["compute"]
PY
  ;;
summary_cli)
  profile_mlp run
  want=$(sed -n 's/.*cycles total \([0-9]*\) over.*/\1/p' report.txt)
  "$BIN/popef-info" mlp.popef --summary >graph_summary.txt || die "popef-info --summary failed"
  for line in "Target:" "  Number of IPUs:         1" "Graph:" "Memory Usage:" "  By Tile (Excluding Gaps):" \
              "0 tile(s) out of memory"; do
    grep -qF -- "$line" graph_summary.txt || { cat graph_summary.txt; die "popef-info --summary lacks '$line'"; }
  done
  grep -q "^Execution:" graph_summary.txt && die "graph-only summary has an Execution section"
  "$BIN/poprun-lite" mlp.popef --inputs "$MLP/inputs.npz" --outputs o.npz --iterations 2 --summary \
    --show-execution-steps --show-var-storage --profile-dir prof >summary.txt || die "poprun-lite --summary failed"
  total=$("$PY" -c "print(f'{int(\"$want\"):,}')")
  grep -qE "^  Total cycles: +$total \(approx [0-9.]+ microseconds\)$" summary.txt || { cat summary.txt; die "no 'Total cycles: $total'"; }
  for line in "  Cycles by vertex type:" "Steps" "  OnTileExecute (cycles" "    Thread Balance:" \
              "    Data Balance (mean / max data per tile):" "--- External Sync ---" \
              "  Variable Storage Liveness: All tiles" "    Always-live bytes:" "Live Bytes (excluding always-live):"; do
    grep -qF -- "$line" summary.txt || { cat summary.txt; die "poprun-lite --summary lacks '$line'"; }
  done
  cmp -s <(sed -n '/^Target:/,/^Graph:/p' summary.txt) <(sed -n '/^Target:/,/^Graph:/p' graph_summary.txt) ||
    die "popef-info and poprun-lite print different Target sections"
  ;;
summary_colours)
  "$BIN/popc-onnx" "$MLP/model.onnx" -o mlp.popef || die "compile"
  "$BIN/popef-info" mlp.popef --summary >plain.txt || die "summary"
  grep -q $'\033' plain.txt && die "colour codes in piped output"
  CLICOLOR_FORCE=1 "$BIN/popef-info" mlp.popef --summary >forced.txt || die "summary"
  grep -q $'\033\[1;36mTarget:' forced.txt || die "CLICOLOR_FORCE=1 gave no colour"
  CLICOLOR=0 "$BIN/popef-info" mlp.popef --summary >off.txt || die "summary"
  grep -q $'\033' off.txt && die "colour codes with CLICOLOR=0"
  [ "$(sed 's/\x1b\[[0-9;]*m//g' forced.txt)" = "$(cat plain.txt)" ] || die "coloured text differs beyond colour"
  ;;
popc_report_html)
  profile_mlp run
  "$BIN/popc-report" prof -o report.html || die "popc-report failed"
  [ "$(wc -c <report.html)" -gt 5000 ] || die "report too small"
  for id in heatmap compute-sets tile-balance exchanges program-tree ir-graph profile-data; do
    grep -q "id=\"$id\"" report.html || die "report lacks #$id"
  done
  grep -qE '<(script|link|img)[^>]* (src|href)=' report.html && die "report loads external resources"
  "$BIN/popc-report" prof || die "popc-report without -o failed"
  [ -s prof/report.html ] || die "default output prof/report.html missing"
  ;;
popc_report_errors)
  expect_error "no graph.json" "$BIN/popc-report" missing -o r.html
  mkdir bad && echo '{"target": ' >bad/graph.json
  expect_error "not valid JSON" "$BIN/popc-report" bad -o r.html
  mkdir other && echo '{"a": 1}' >other/graph.json
  expect_error "field 'target' is missing" "$BIN/popc-report" other -o r.html
  ;;
chromium_renders_report)
  CHROME=$(command -v chromium || command -v chromium-browser || true)
  if [ -z "$CHROME" ]; then
    echo "SKIP: chromium not installed (tools/install-deps.sh installs it; CI runs this test)"
    exit 77
  fi
  profile_mlp run
  "$BIN/popc-report" prof -o report.html || die "popc-report failed"
  flags=(--headless=new --no-sandbox --disable-gpu --no-first-run --disable-extensions --user-data-dir="$TMP/chrome"
         --enable-logging=stderr --v=0 --virtual-time-budget=10000)
  timeout 120 "$CHROME" "${flags[@]}" --dump-dom "file://$TMP/report.html" >dom.html 2>chrome.err ||
    { tail -20 chrome.err; die "chromium --dump-dom failed"; }
  grep -q 'data-rendered="ok"' dom.html || { tail -20 chrome.err; die "the report's script did not finish rendering"; }
  grep -iE 'CONSOLE.*(Uncaught|Error)|Uncaught ' chrome.err && die "console errors while rendering"
  "$PY" - <<'PY' || die "rendered DOM is not filled in"
import json, re
dom = open("dom.html").read()
g = json.load(open("prof/graph.json"))
tiles = len(re.findall(r'<rect[^>]*class="tile"', dom))
assert tiles == g["target"]["numTiles"], (tiles, g["target"]["numTiles"])
cs = re.search(r'<table id="compute-sets">(.*?)</table>', dom, re.S).group(1)
assert cs.count("<tr>") == 1 + min(50, len(g["computeSets"]["names"])), cs.count("<tr>")
names = [re.sub(r'&', '&amp;', n) for n in g["computeSets"]["names"]]
assert any(n in cs for n in names)
assert dom.count('class="program"') == len(g["programs"])
assert dom.count('class="ir-op"') == min(2000, len(g["ir"]["ops"]))
totals = re.search(r'<table id="totals">(.*?)</table>', dom, re.S).group(1)
x = json.load(open("prof/execution.json"))
assert f'{x["simulation"]["cycles"]:,}' in totals
PY
  timeout 120 "$CHROME" "${flags[@]}" --window-size=1280,1600 --screenshot="$TMP/report.png" \
    "file://$TMP/report.html" >/dev/null 2>shot.err || { tail -20 shot.err; die "chromium --screenshot failed"; }
  "$PY" - <<'PY' || die "screenshot is not a real page"
import struct, zlib
data = open("report.png", "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", data[16:24])
assert (w, h) == (1280, 1600), (w, h)
assert len(data) > 20000, len(data)  # a blank page compresses to a few KB
PY
  ;;
chromium_report_resnet50)
  # Issue 22, item 3: the report on a real model, read from Chromium's DOM and screenshot.
  CHROME=$(command -v chromium || command -v chromium-browser || true)
  if [ -z "$CHROME" ]; then
    echo "SKIP: chromium not installed (tools/install-deps.sh installs it; CI runs this test)"
    exit 77
  fi
  "$PY" "$SRC/test/models/export_models.py" models resnet50 >export.log 2>&1 || { tail -5 export.log; die "export failed"; }
  "$BIN/popc-onnx" models/resnet50/model.onnx -o r50.popef --profile-dir prof --no-cache || die "compile failed"
  "$BIN/poprun-lite" r50.popef --inputs models/resnet50/inputs.npz --profile-dir prof >/dev/null || die "run failed"
  # The profile's file names its directory too (it used to advise --profile-dir prof/graph.json).
  "$BIN/popc-report" prof/graph.json || die "popc-report prof/graph.json failed"
  [ -s prof/report.html ] || die "no prof/report.html"
  flags=(--headless=new --no-sandbox --disable-gpu --no-first-run --disable-extensions --user-data-dir="$TMP/chrome"
         --enable-logging=stderr --v=0 --virtual-time-budget=30000)
  timeout 300 "$CHROME" "${flags[@]}" --dump-dom "file://$TMP/prof/report.html" >dom.html 2>chrome.err ||
    { tail -20 chrome.err; die "chromium --dump-dom failed"; }
  grep -q 'data-rendered="ok"' dom.html || { tail -20 chrome.err; die "the report's script did not finish rendering"; }
  timeout 300 "$CHROME" "${flags[@]}" --window-size=1280,6000 --screenshot="$TMP/page.png" \
    "file://$TMP/prof/report.html" >/dev/null 2>shot.err || { tail -20 shot.err; die "chromium --screenshot failed"; }
  timeout 300 "$CHROME" "${flags[@]}" --window-size=1280,2400 --screenshot="$TMP/graph.png" \
    "file://$TMP/prof/report.html#ir-graph-section" >/dev/null 2>shot.err || { tail -20 shot.err; die "chromium --screenshot failed"; }
  "$PY" - <<'PY' || die "the ResNet-50 report is not what a reader needs"
import json, re
from PIL import Image
dom = open("dom.html").read()
g = json.load(open("prof/graph.json"))
cap = g["target"]["bytesPerTile"]
used = g["memory"]["byTile"]["totalIncludingGaps"]
# The heat map is coloured by each tile's share of its own memory, not of the busiest tile.
fills = [float(f) for f in re.findall(r'<rect[^>]*class="tile"[^>]*data-fill="([0-9.]+)"', dom)]
assert len(fills) == g["target"]["numTiles"], len(fills)
for f, u in zip(fills, used):
    assert abs(f - u / cap) < 1e-3, (f, u / cap)
assert "share of each tile's" in dom and "busiest tile" in dom
# ResNet-50 uses about half of each tile: no tile may be drawn in the top (red) band.
hues = [int(h) for h in re.findall(r'class="tile"[^>]*fill="hsl\((\d+),', dom)]
assert min(hues) > 40, min(hues)
# Long sections are folded, with a summary line; the IR graph is laid out top to bottom.
for section in ["compute-sets-section", "tile-balance-section", "exchanges-section", "program-tree-section",
                "ir-graph-section"]:
    tag = re.search(r'<details[^>]*id="%s"[^>]*>' % section, dom).group(0)
    assert " open" not in tag, tag
assert dom.count('class="ir-op"') == len(g["ir"]["ops"])
svg = re.search(r'<svg[^>]*id="ir-svg"[^>]*>', dom).group(0)
w, h = (int(v) for v in re.search(r'width="(\d+)" height="(\d+)"', svg).groups())
assert h > 4 * w and w < 1280, (w, h)  # tall and narrow: no sideways scrolling
assert 'class="ir-edge skip"' in dom  # the residual connections are drawn
# The folded page fits in about two screens (it was 7,200 px tall).
page = Image.open("page.png").convert("RGB")
bg = page.getpixel((5, page.height - 5))
last = max(y for y in range(0, page.height, 4) if any(page.getpixel((x, y)) != bg for x in range(0, page.width, 8)))
assert last < 2000, last
# The graph, opened through its link, shows boxes (light blue) in the screenshot.
shot = Image.open("graph.png").convert("RGB")
blue = sum(1 for y in range(0, shot.height, 4) for x in range(0, shot.width, 4) if shot.getpixel((x, y)) == (221, 232, 248))
assert blue > 500, blue
print(f"ok: {len(fills)} tiles, hues {min(hues)}-{max(hues)}, page {last} px, graph {w}x{h}")
PY
  ;;
logging_env)
  # POPC_LOG_DEST to a file, POPC_LOG_LEVEL, POPC_LOG_CONFIG per module.
  POPC_LOG_DEST=$TMP/log.txt POPC_LOG_LEVEL=INFO "$BIN/popc-onnx" "$MLP/model.onnx" -o a.popef --no-cache \
    2>err.txt || die "compile failed"
  grep -q '^\[driver\] info: compiled .*model.onnx' log.txt || { cat log.txt; die "no driver info line in POPC_LOG_DEST"; }
  [ -s err.txt ] && { cat err.txt; die "logged to stderr despite POPC_LOG_DEST"; }
  echo '{"driver": "OFF"}' >conf.json
  POPC_LOG_DEST=stdout POPC_LOG_LEVEL=info POPC_LOG_CONFIG=conf.json "$BIN/popc-onnx" "$MLP/model.onnx" -o b.popef \
    --no-cache >out.txt || die "compile failed"
  grep -q '^\[driver\]' out.txt && die "POPC_LOG_CONFIG did not silence the driver module"
  echo '{"driver": "LOUD"}' >bad.json
  expect_error "POPC_LOG_CONFIG bad.json: module 'driver': unknown log level 'loud'" \
    env POPC_LOG_CONFIG=bad.json "$BIN/popc-onnx" "$MLP/model.onnx" -o c.popef
  expect_error "POPC_LOG_LEVEL: unknown log level 'chatty'" env POPC_LOG_LEVEL=chatty "$BIN/poprun-lite" a.popef
  ;;
tensor_map)
  "$BIN/popc-onnx" "$MLP/model.onnx" -o mlp.popef --save-tensor-map map.json --no-cache || die "compile failed"
  "$BIN/popef-info" mlp.popef --json --all >info.json || die "popef-info failed"
  "$PY" - <<'PY' || die "tensor map does not match the executable"
import json
m = json.load(open("map.json")); info = json.load(open("info.json"))
assert list(m) == [t["name"] for t in info["tensors"]]
for t in info["tensors"]:
    e = m[t["name"]]
    assert e["dtype"] == t["dtype"] and e["shape"] == t["shape"] and e["role"] == t["role"]
    assert len(e["tiles"]) == t["tiles"] and len(e["intervals"]) == t["intervals"]
    assert sum(end - begin for begin, end, tile, offset in e["intervals"]) == t["bytes"]
    assert sorted({iv[2] for iv in e["intervals"]}) == e["tiles"]
PY
  ;;
ir_dump_and_dot_checks)
  POPC_IR_DUMP=ir.txt "$BIN/popc-onnx" "$MLP/model.onnx" -o a.popef || die "compile failed"
  grep -q '^graph main' ir.txt || die "POPC_IR_DUMP wrote no IR"
  grep -q 'Gemm' ir.txt || die "IR dump lacks the model's ops"
  mkdir dots && POPC_DOT_CHECKS=FWD0:FINAL POPC_DOT_DIR=dots "$BIN/popc-onnx" "$MLP/model.onnx" -o b.popef || die "compile"
  [ "$(ls dots)" = "$(printf '00_FWD0.dot\n04_FINAL.dot')" ] || { ls dots; die "POPC_DOT_CHECKS wrote other checkpoints"; }
  grep -q digraph dots/00_FWD0.dot || die "not a DOT file"
  mkdir all && POPC_DOT_CHECKS=ALL POPC_DOT_DIR=all "$BIN/popc-onnx" "$MLP/model.onnx" -o c.popef || die "compile"
  [ "$(ls all | wc -l)" -eq 5 ] || { ls all; die "ALL did not write the 5 checkpoints"; }
  expect_error "unknown checkpoint 'NOPE'" env POPC_DOT_CHECKS=FWD0:NOPE "$BIN/popc-onnx" "$MLP/model.onnx" -o d.popef
  cmp a.popef b.popef || die "dumps changed the executable"
  ;;
progress_on_tty)
  # Phase progress only on a terminal (script gives the compile a pty), never with --quiet or in a pipe.
  command -v script >/dev/null || { echo "SKIP: no script(1) to make a pty"; exit 77; }
  script -qec "'$BIN/popc-onnx' '$MLP/model.onnx' -o a.popef --no-cache" /dev/null >tty.txt || die "compile on a pty failed"
  for phase in "[1/5] import" "[2/5] passes" "[3/5] lowering" "[4/5] codegen" "[5/5] write"; do
    grep -qF "popc-onnx: $phase (" tty.txt || { cat -v tty.txt; die "no progress '$phase' on the terminal"; }
  done
  script -qec "'$BIN/popc-onnx' '$MLP/model.onnx' -o b.popef --no-cache --quiet" /dev/null >quiet.txt || die "compile failed"
  grep -q "import" quiet.txt && die "--quiet still shows progress"
  "$BIN/popc-onnx" "$MLP/model.onnx" -o c.popef --no-cache 2>err.txt || die "compile failed"
  [ -s err.txt ] && { cat -v err.txt; die "progress written to a non-terminal stderr"; }
  cmp a.popef c.popef || die "progress changed the executable"
  ;;
profile_format_documented)
  # The schema is docs/profile-format.md: every key the profiles hold is documented there,
  # and every per-tile array has numTiles entries.
  profile_mlp run
  "$PY" - "$SRC/docs/profile-format.md" <<'PY' || die "profiles and docs/profile-format.md disagree"
import json, re, sys
doc = open(sys.argv[1]).read()
documented = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)", doc))
documented |= {w for span in re.findall(r"`([^`]+)`", doc) for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", span)}
g = json.load(open("prof/graph.json")); x = json.load(open("prof/execution.json"))
n = g["target"]["numTiles"]
missing, bad = set(), []
def walk(v, path):
    if isinstance(v, dict):
        for k, e in v.items():
            if k not in documented:
                missing.add(f"{path}.{k}")
            walk(e, f"{path}.{k}" if path else k)
    elif isinstance(v, list):
        perTile = re.search(r"ByTile|byTile\.|byCategory\.", path)
        if perTile and v and not isinstance(v[0], list):
            if len(v) != n:
                bad.append((path, len(v)))
        for e in v:
            walk(e, path + "[]")
walk(g, ""); walk(x, "")
assert not missing, sorted(missing)
assert not bad, bad[:5]
# Step and program types are the documented tags.
for p in g["programs"]:
    assert p["type"] in documented, p["type"]
for s in x["simulation"]["steps"]:
    assert s["type"] in documented, s["type"]
PY
  ;;
pipelined_replicated_matches_report)
  # Pipelined over 3 IPUs (parallel Sequences), replicated twice, an EVERYN anchor: the execution
  # profile's cycles are still the engine's.
  M=$SRC/test/e2e/multiipu/models.py
  "$PY" "$M" model cnn c.onnx && "$PY" "$M" inputs cnn in.npz --lead 6,2 || die "models.py failed"
  "$BIN/popc-onnx" c.onnx -o c.popef --tiles-per-ipu 32 --auto-shard 3 --pipeline --batches-per-step 6 \
    --replication-factor 2 --anchor y=EVERYN:3 --profile-dir prof || die "compile failed"
  "$BIN/poprun-lite" c.popef --inputs in.npz --outputs c.npz --report --profile-dir prof --summary >report.txt ||
    die "poprun-lite failed"
  want=$(sed -n 's/.*cycles total \([0-9]*\) over.*/\1/p' report.txt)
  "$PY" - "$want" <<'PY' || die "execution.json does not match --report"
import json, sys
x = json.load(open("prof/execution.json")); g = json.load(open("prof/graph.json"))
assert g["target"]["replicationFactor"] == 2 and g["target"]["numIPUs"] == 3
assert any(p.get("parallel") for p in g["programs"]), "no parallel Sequence"
assert x["simulation"]["cycles"] == int(sys.argv[1]), (x["simulation"]["cycles"], sys.argv[1])
PY
  grep -qE "^  Total cycles: +$("$PY" -c "print(f'{int(\"$want\"):,}')") " report.txt || die "summary total differs"
  ;;
pipelined_training_matches_report)
  # A training pipeline: two stages and a stash per IPU in one cycle, which add up
  # (Program.ipu); the execution profile's cycles are still the engine's.
  "$PY" "$SRC/test/train/make_case.py" t mlp_sgd_accum4_shard2_pipe --steps 1 >/dev/null || die "make_case.py failed"
  # shellcheck disable=SC2046 # flags.txt holds the case's popc-onnx flags
  "$BIN/popc-onnx" t/model.onnx -o t.popef $(cat t/flags.txt) --profile-dir prof || die "compile failed"
  "$BIN/poprun-lite" t.popef --inputs t/data.npz --report --profile-dir prof >report.txt || die "poprun-lite failed"
  want=$(sed -n 's/.*cycles total \([0-9]*\) over.*/\1/p' report.txt)
  "$PY" - "$want" <<'PY' || die "execution.json does not match --report"
import json, sys
x = json.load(open("prof/execution.json")); g = json.load(open("prof/graph.json"))
progs = g["programs"]
shared = [p for p in progs if p.get("parallel")
          and len([progs[c].get("ipu") for c in p["children"]]) > len({progs[c].get("ipu") for c in p["children"]})]
assert shared, "no pipeline cycle runs two programs on one IPU"
assert x["simulation"]["cycles"] == int(sys.argv[1]), (x["simulation"]["cycles"], sys.argv[1])
PY
  ;;
*) die "unknown case $CASE" ;;
esac
echo "PASS: $CASE"

#!/usr/bin/env bash
# Cache end-to-end cases: cases.sh CASE BIN_DIR SOURCE_DIR SCRATCH_DIR
. "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
unset POPC_CACHE_DIR POPC_REMOTE_CACHE POPC_CACHE_MAX_SIZE POPC_PRELOAD_POPEF POPC_LOG_LEVEL
MLP=$SRC/samples/mlp/model.onnx CNN=$SRC/samples/cnn/model.onnx

compile() { "$BIN/popc-onnx" "$@" || die "popc-onnx $* failed"; }
# counter NAME: a counter from the stats file of ./c (0 when absent)
counter() { awk -v k="$1" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }' c/stats; }
# entries KIND: entries of a kind (each is a payload file plus its .meta header)
entries() { find c/ -path '*/'"$1"'/*' -type f -name '*.meta' ! -name '.tmp-*' | wc -l; }
# A reference popef compiled without any cache.
reference() { compile "$1" -o "$2" --no-cache "${@:3}"; }

# ---- nginx with WebDAV on 127.0.0.1, all state in ./nginx -------------------
NGINX_PID=
start_nginx() {
  PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  local d=$TMP/nginx
  mkdir -p "$d/root" "$d/tmp"
  local user=""
  [ "$(id -u)" -eq 0 ] && user="user root;"
  cat > "$d/nginx.conf" <<CONF
$user
worker_processes 1;
daemon off;
pid $d/nginx.pid;
error_log $d/error.log;
events { worker_connections 64; }
http {
  access_log $d/access.log;
  client_body_temp_path $d/tmp/body;
  proxy_temp_path $d/tmp/proxy;
  fastcgi_temp_path $d/tmp/fastcgi;
  uwsgi_temp_path $d/tmp/uwsgi;
  scgi_temp_path $d/tmp/scgi;
  client_max_body_size 0;
  server {
    listen 127.0.0.1:$PORT;
    root $d/root;
    location /broken/ { return 500; }
    location / {
      dav_methods PUT DELETE;
      create_full_put_path on;
      dav_access user:rw group:r all:r;
    }
  }
}
CONF
  /usr/sbin/nginx -p "$d" -c "$d/nginx.conf" -e "$d/error.log" &
  NGINX_PID=$!
  trap 'kill $NGINX_PID 2>/dev/null; wait $NGINX_PID 2>/dev/null' EXIT
  for _ in $(seq 50); do
    curl -s -o /dev/null "http://127.0.0.1:$PORT/" && return 0
    sleep 0.1
  done
  cat "$d/error.log"; die "nginx did not start"
}
URL() { echo "http://127.0.0.1:$PORT/popc"; }

case $CASE in

exe_hit_miss)
  reference "$CNN" ref.popef
  compile "$CNN" -o a.popef --cache-dir c --log-level info 2>a.log
  grep -q "cache miss" a.log || die "first compile is not a miss: $(cat a.log)"
  compile "$CNN" -o b.popef --cache-dir c --log-level info 2>b.log
  grep -q "cache hit" b.log || die "second compile is not a hit: $(cat b.log)"
  grep -q "\[driver\]" b.log && die "a hit compiled: $(cat b.log)"
  cmp ref.popef a.popef && cmp ref.popef b.popef || die "cached popef differs from a fresh compile"
  [ "$(counter exe.hits)" = 1 ] && [ "$(counter exe.misses)" = 1 ] && [ "$(counter exe.writes)" = 1 ] ||
    die "counters: $(cat c/stats)"
  # a hit is a hard link to the (read-only) entry; --cache-copy makes an independent copy
  entry=$(find c/exe -type f ! -name '.tmp-*' ! -name '*.meta')
  [ "$(stat -c %i b.popef)" = "$(stat -c %i "$entry")" ] || die "hit not hard-linked to $entry"
  [ -w b.popef ] && [ "$(id -u)" -ne 0 ] && die "hard-linked hit is writable"
  compile "$CNN" -o copy.popef --cache-dir c --cache-copy
  [ "$(stat -c %i copy.popef)" != "$(stat -c %i "$entry")" ] && cmp copy.popef ref.popef || die "--cache-copy did not copy"
  # POPC_CACHE_DIR works like --cache-dir; --no-cache bypasses it
  POPC_CACHE_DIR=c compile "$CNN" -o d.popef --log-level info 2>d.log
  grep -q "cache hit" d.log || die "POPC_CACHE_DIR not used"
  POPC_CACHE_DIR=c compile "$CNN" -o e.popef --no-cache --log-level info 2>e.log
  grep -q "cache" e.log && die "--no-cache still used the cache"
  [ "$(counter exe.hits)" = 3 ] || die "counters: $(cat c/stats)"
  # the same bytes under another name and directory hit (content addressed)
  mkdir -p elsewhere && cp "$CNN" elsewhere/renamed.onnx
  compile elsewhere/renamed.onnx -o f.popef --cache-dir c --log-level info 2>f.log
  grep -q "cache hit" f.log || die "renamed model missed"
  # the poprun-lite result of a cache hit matches PyTorch
  "$BIN/poprun-lite" b.popef --inputs "$SRC/samples/cnn/inputs.npz" --outputs out.npz || die "run failed"
  "$BIN/npz-compare" out.npz "$SRC/samples/cnn/expected.npz" --rtol 1e-4 --atol 1e-5 || die "wrong outputs"
  ;;

key_changes)
  # key_of ARGS...: compile into ./c and print hit/miss
  key_of() { "$BIN/popc-onnx" "$@" -o k.popef --cache-dir c --log-level info 2>&1 | grep -o "cache \(hit\|miss\) [0-9a-f]*"; }
  base=$(key_of "$MLP"); echo "$base" | grep -q miss || die "first: $base"
  again=$(key_of "$MLP"); [ "$again" = "cache hit ${base#cache miss }" ] || die "same input: $again vs $base"
  for opts in "--tiles-per-ipu 64" "--bytes-per-tile 500000" "--arch ipu1" "--num-ipus 2" \
              "--input-shape input=4,64"; do
    k=$(key_of "$MLP" $opts)
    echo "$k" | grep -q "miss" || die "option '$opts' did not change the key: $k"
    [ "${k#cache miss }" != "${base#cache miss }" ] || die "option '$opts' kept key"
  done
  # options that do not change the executable keep the key
  k=$(key_of "$MLP" --stats); echo "$k" | grep -q hit || die "--stats changed the key: $k"
  # a one-byte change of the model (its doc string) changes the key
  "$PY" - "$MLP" <<'PY' || die "python"
import onnx, sys
m = onnx.load(sys.argv[1]); m.doc_string = "changed"; onnx.save(m, "mlp2.onnx")
PY
  k=$(key_of mlp2.onnx); echo "$k" | grep -q miss || die "model change kept the key: $k"
  # external data: changing only the external file changes the key
  mkdir -p ext
  "$PY" - "$MLP" <<'PY' || die "python"
import onnx, sys
m = onnx.load(sys.argv[1])
onnx.save(m, "ext/model.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
          location="weights.bin", size_threshold=0)
PY
  [ -s ext/weights.bin ] || die "no external data written"
  reference ext/model.onnx ref_ext.popef
  k1=$(key_of ext/model.onnx); echo "$k1" | grep -q miss || die "ext: $k1"
  k2=$(key_of ext/model.onnx); echo "$k2" | grep -q hit || die "ext again: $k2"
  cmp k.popef ref_ext.popef || die "external-data popef from cache differs"
  "$PY" - <<'PY' || die "python"
import numpy as np
b = bytearray(open("ext/weights.bin", "rb").read())
v = np.frombuffer(bytes(b[:4]), dtype=np.float32)[0]
b[:4] = np.float32(v + 1.0).tobytes()
open("ext/weights.bin", "wb").write(bytes(b))
PY
  k3=$(key_of ext/model.onnx); echo "$k3" | grep -q miss || die "external data change kept the key: $k3"
  reference ext/model.onnx ref_ext2.popef
  cmp k.popef ref_ext2.popef || die "popef after external data change is stale"
  cmp -s ref_ext.popef ref_ext2.popef && die "changed weights gave the same popef"
  # external data referenced from node attributes, also inside subgraphs (If
  # branches), is found by the wire-format scan and keyed
  mkdir -p attr
  "$PY" - <<'PY' || die "python"
import numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto as T
def const(name, v):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.full((2, 3), v, np.float32), name + "_v"))
then_g = helper.make_graph([const("t", 2.0)], "then", [], [helper.make_tensor_value_info("t", T.FLOAT, [2, 3])])
else_g = helper.make_graph([const("e", 3.0)], "else", [], [helper.make_tensor_value_info("e", T.FLOAT, [2, 3])])
nodes = [const("c", 1.0), helper.make_node("Add", ["x", "c"], ["s"]),
         helper.make_node("ReduceSum", ["s"], ["r"], keepdims=0),
         helper.make_node("Greater", ["r", "zero"], ["cond"]),
         helper.make_node("If", ["cond"], ["b"], then_branch=then_g, else_branch=else_g),
         helper.make_node("Add", ["s", "b"], ["y"])]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, [2, 3])],
                      [helper.make_tensor_value_info("y", T.FLOAT, [2, 3])],
                      [numpy_helper.from_array(np.float32(0), "zero")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
from onnx.external_data_helper import convert_model_to_external_data
convert_model_to_external_data(m, all_tensors_to_one_file=False, size_threshold=0, convert_attribute=True)
onnx.save(m, "attr/model.onnx")
import os
names = sorted(os.listdir("attr"))
assert {"c_v", "t_v", "e_v"} <= set(names), names
PY
  a1=$(key_of attr/model.onnx); a1=${a1##* }
  for f in c_v t_v e_v; do
    printf '\x01' | dd of=attr/$f bs=1 seek=0 conv=notrunc status=none
    a2=$(key_of attr/model.onnx); a2=${a2##* }
    [ -n "$a2" ] && [ "$a2" != "$a1" ] || die "external data $f (node attribute) not keyed: $a1 $a2"
    a1=$a2
  done
  rm attr/e_v
  "$BIN/popc-onnx" attr/model.onnx -o z.popef --cache-dir c --log-level info 2>z.log
  grep -q "cache hit\|cache miss" z.log && die "missing external data must skip the cache: $(cat z.log)"
  true
  ;;

corrupt_entries_rebuilt)
  reference "$CNN" ref.popef
  compile "$CNN" -o a.popef --cache-dir c
  entry=$(find c/exe -type f ! -name '.tmp-*' ! -name '*.meta')
  [ -f "$entry" ] || die "no entry"
  good=$TMP/good.entry; cp "$entry" "$good"
  check_rebuilt() { # what: after damaging the entry, a compile must warn, delete, rebuild the right bytes
    compile "$CNN" -o out.popef --cache-dir c 2>err.txt
    grep -q "deleting bad cache entry" err.txt || die "$1: no warning: $(cat err.txt)"
    cmp out.popef ref.popef || die "$1: served a bad executable"
    cmp "$entry" "$good" || die "$1: entry not rebuilt"
  }
  "$PY" -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[len(b)//2]^=1; open(p,'wb').write(b)" "$entry"
  check_rebuilt "bit flip"
  truncate -s -100 "$entry"; check_rebuilt "truncated"
  truncate -s 10 "$entry"; check_rebuilt "cut short"
  # foreign: the entry of another model under this key
  compile "$MLP" -o mlp.popef --cache-dir c
  other=$(find c/exe -type f ! -name '.tmp-*' ! -name '*.meta' ! -path "$entry")
  cp "$other" "$entry"; check_rebuilt "foreign entry"
  printf 'garbage' > "$entry"; check_rebuilt "garbage"
  [ "$(counter exe.corrupt)" = 5 ] || die "corrupt counter: $(cat c/stats)"
  # verify: finds and deletes a bad entry, exit 1; then clean exit 0
  "$PY" -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[-1]^=1; open(p,'wb').write(b)" "$entry"
  "$BIN/popc-cache" verify --cache-dir c >v.txt; rc=$?
  [ $rc -eq 1 ] || die "verify exit $rc with a bad entry"
  grep -q "1 bad" v.txt || die "verify: $(cat v.txt)"
  [ -e "$entry" ] && die "verify left the bad entry"
  "$BIN/popc-cache" verify --cache-dir c >v2.txt || die "verify after cleanup: $(cat v2.txt)"
  ;;

concurrent_compiles)
  reference "$MLP" ref_mlp.popef; reference "$CNN" ref_cnn.popef
  for round in cold warm; do
    pids=()
    for i in 0 1 2 3 4 5 6 7; do
      if [ $((i % 2)) = 0 ]; then m=$MLP; r=mlp; else m=$CNN; r=cnn; fi
      "$BIN/popc-onnx" "$m" -o $round-$i-$r.popef --cache-dir c 2>$round-$i.err &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || die "a concurrent compile failed"; done
    for i in 0 1 2 3 4 5 6 7; do
      f=$(ls $round-$i-*.popef); r=${f##*-}; r=${r%.popef}
      cmp "$f" ref_$r.popef || die "$f differs from a fresh compile"
    done
    grep -l "warning\|error" $round-*.err && die "warnings: $(cat $round-*.err)"
  done
  [ "$(entries exe)" = 2 ] || die "expected 2 entries, got $(entries exe)"
  [ "$(counter exe.hits)" -ge 8 ] || die "warm round did not hit: $(cat c/stats)"
  "$BIN/popc-cache" verify --cache-dir c || die "verify after concurrent writes"
  find c -name '.tmp-*' | grep -q . && die "temporary files left"
  "$BIN/poprun-lite" warm-1-cnn.popef --inputs "$SRC/samples/cnn/inputs.npz" --outputs out.npz || die "run"
  "$BIN/npz-compare" out.npz "$SRC/samples/cnn/expected.npz" --rtol 1e-4 --atol 1e-5 || die "wrong outputs"
  ;;

compile_once)
  # 8 concurrent compiles of one model: one compiles, 7 wait for its entry and hit
  reference "$CNN" ref.popef
  pids=()
  for i in 0 1 2 3 4 5 6 7; do
    "$BIN/popc-onnx" "$CNN" -o o$i.popef --cache-dir c --log-level info 2>o$i.log & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || die "a concurrent compile failed"; done
  for i in 0 1 2 3 4 5 6 7; do cmp o$i.popef ref.popef || die "o$i.popef differs from a fresh compile"; done
  hits=$(grep -l "cache hit" o*.log | wc -l)
  [ "$hits" = 7 ] || die "want 7 hits and 1 compile, got $hits hits: $(cat o*.log)"
  [ "$(counter exe.writes)" = 1 ] && [ "$(counter exe.hits)" = 7 ] || die "counters: $(cat c/stats)"
  if find c -name '.lock-*' | grep -q .; then die "compile lock left behind"; fi
  ;;

killed_compiler)
  # a compiler killed while it holds the key's lock: the waiter takes over
  reference "$CNN" ref.popef
  env POPC_CACHE_TEST_PAUSE_MID_WRITE=60 "$BIN/popc-onnx" "$CNN" -o a.popef --cache-dir c 2>a.err &
  a=$!
  for _ in $(seq 600); do grep -q "test pause" a.err 2>/dev/null && break; sleep 0.1; done
  grep -q "test pause" a.err || { kill -9 $a; die "the first compile never paused"; }
  "$BIN/popc-onnx" "$CNN" -o b.popef --cache-dir c --log-level info 2>b.log &
  b=$!
  for _ in $(seq 600); do grep -q "is compiling the same model" b.log 2>/dev/null && break; sleep 0.1; done
  grep -q "(pid $a) is compiling the same model" b.log || { kill -9 $a $b; die "no wait: $(cat b.log)"; }
  kill -9 $a; wait $a 2>/dev/null
  wait $b || die "the waiting compile failed after the holder died: $(cat b.log)"
  cmp b.popef ref.popef || die "wrong executable after the holder died"
  # a live holder past --cache-lock-timeout: compile here too, with a warning
  rm -rf c
  env POPC_CACHE_TEST_PAUSE_MID_WRITE=60 "$BIN/popc-onnx" "$CNN" -o a.popef --cache-dir c 2>a2.err &
  a=$!
  for _ in $(seq 600); do grep -q "test pause" a2.err 2>/dev/null && break; sleep 0.1; done
  compile "$CNN" -o t.popef --cache-dir c --cache-lock-timeout 0.5 2>t.log
  kill -9 $a; wait $a 2>/dev/null
  grep -q "computing it here too" t.log || die "no timeout warning: $(cat t.log)"
  cmp t.popef ref.popef || die "wrong executable after the lock timeout"
  ;;

killed_writer)
  reference "$CNN" ref.popef
  for point in BEFORE_RENAME MID_WRITE; do
    rm -rf c
    # One log per point: the background redirect may not have truncated a shared
    # file yet when the loop first reads it (the last point's pause would match).
    env POPC_CACHE_TEST_PAUSE_$point=60 "$BIN/popc-onnx" "$CNN" -o killed.popef --cache-dir c 2>killed-$point.err &
    pid=$!
    for _ in $(seq 600); do grep -q "test pause" killed-$point.err 2>/dev/null && break; sleep 0.1; done
    grep -q "test pause" killed-$point.err || { kill -9 $pid; die "$point: writer never paused"; }
    kill -9 $pid; wait $pid 2>/dev/null
    find c -name '.tmp-*' | grep -q . || die "$point: expected the dead writer's temporary file"
    [ "$(entries exe)" = 0 ] || die "$point: a partial entry is visible"
    # readers see a miss, compile, and get the right bytes; verify is clean
    compile "$CNN" -o after.popef --cache-dir c --log-level info 2>after.log
    grep -q "cache miss" after.log || die "$point: not a miss: $(cat after.log)"
    cmp after.popef ref.popef || die "$point: wrong executable after a killed writer"
    compile "$CNN" -o hit.popef --cache-dir c --log-level info 2>hit.log
    grep -q "cache hit" hit.log && cmp hit.popef ref.popef || die "$point: no good hit afterwards"
    "$BIN/popc-cache" verify --cache-dir c >/dev/null || die "$point: verify found bad entries"
  done
  ;;

lru_eviction)
  compile "$MLP" -o m.popef --cache-dir c
  compile "$CNN" -o n.popef --cache-dir c
  compile "$MLP" -o t.popef --cache-dir c --tiles-per-ipu 64
  sm=$(stat -c %s m.popef) sn=$(stat -c %s n.popef) st=$(stat -c %s t.popef)
  sleep 0.05
  compile "$CNN" -o n.popef --cache-dir c # CNN becomes the most recently used...
  sleep 0.05
  compile "$MLP" -o t.popef --cache-dir c --tiles-per-ipu 64 # ...then the small-tile MLP
  # room for the two most recent only: the plain MLP (least recently used) goes
  limit=$((sn + st + 128 + 64))
  compile "$MLP" -o x.popef --cache-dir c --tiles-per-ipu 32 --cache-max-size $limit 2>ev.log
  # after adding a 4th entry over the limit, LRU order is: mlp, cnn, mlp-64, mlp-32
  [ "$(entries exe)" -le 2 ] || die "not evicted: $(entries exe) entries"
  compile "$MLP" -o x2.popef --cache-dir c --tiles-per-ipu 32 --log-level info 2>h.log
  grep -q "cache hit" h.log || die "the newest entry was evicted"
  compile "$MLP" -o m2.popef --cache-dir c --log-level info 2>h2.log
  grep -q "cache miss" h2.log || die "the least recently used entry survived"
  [ "$(counter exe.evictions)" -ge 2 ] || die "evictions: $(cat c/stats)"
  # popc-cache evict --max-size: down to one entry (the most recent: m2)
  "$BIN/popc-cache" evict --cache-dir c --max-size $((sm + 64)) || die "evict"
  [ "$(entries exe)" = 1 ] || die "evict left $(entries exe)"
  compile "$MLP" -o m3.popef --cache-dir c --log-level info 2>h3.log
  grep -q "cache hit" h3.log || die "evict removed the most recent entry"
  "$BIN/popc-cache" stats --cache-dir c | grep -q "^exe" || die "stats"
  ;;

stats_across_processes)
  compile "$MLP" -o m.popef --cache-dir c
  pids=()
  for i in $(seq 12); do
    "$BIN/popc-onnx" "$MLP" -o h$i.popef --cache-dir c & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || die "compile"; done
  [ "$(counter exe.hits)" = 12 ] || die "hits $(counter exe.hits), want 12: $(cat c/stats)"
  [ "$(counter exe.misses)" = 1 ] || die "misses: $(cat c/stats)"
  "$BIN/popc-cache" stats --cache-dir c > s.txt || die "stats"
  cat s.txt
  grep -Eq "^exe +12 +1 +92.3" s.txt || die "stats table: $(cat s.txt)"
  grep -q "in 1 entries" s.txt || die "stats size line: $(cat s.txt)"
  ;;

jit_object_cache)
  compile "$CNN" -o m.popef
  IN=$SRC/samples/cnn/inputs.npz
  "$BIN/poprun-lite" m.popef --inputs $IN --outputs o1.npz --cache-dir c --log-level info 2>r1.log || die "run 1"
  grep -q "0 of [0-9]* partitions from the cache" r1.log || die "first run: $(cat r1.log)"
  "$BIN/poprun-lite" m.popef --inputs $IN --outputs o2.npz --cache-dir c --log-level info 2>r2.log || die "run 2"
  grep -q ", 0 compiled by LLVM" r2.log || die "second run compiled: $(grep runtime r2.log)"
  cmp o1.npz o2.npz || die "cached machine code gives other outputs"
  "$BIN/npz-compare" o2.npz "$SRC/samples/cnn/expected.npz" --rtol 1e-4 --atol 1e-5 || die "wrong outputs"
  [ "$(counter obj.writes)" -ge 1 ] && [ "$(counter exe.writes)" = 0 ] || die "kinds: $(cat c/stats)"
  # --preload without inputs warms the cache and exits 0 (a model that needs inputs)
  rm -rf c
  "$BIN/poprun-lite" m.popef --preload --cache-dir c > p.txt || die "preload failed"
  grep -q "preloaded" p.txt || die "preload output: $(cat p.txt)"
  POPC_PRELOAD_POPEF=1 POPC_CACHE_DIR=c "$BIN/poprun-lite" m.popef --inputs $IN --outputs o3.npz \
    --log-level info 2>r3.log || die "run 3"
  grep -q ", 0 compiled by LLVM" r3.log || die "preload did not warm the cache: $(cat r3.log)"
  cmp o1.npz o3.npz || die "outputs differ after preload"
  # a whole-module hit reads no bitcode (no probe, no gate)
  grep -q "the whole module: its bitcode was not read" r3.log || die "no whole-module hit: $(grep runtime r3.log)"
  # a corrupted object entry (the largest: machine code) is rebuilt, not loaded
  flip() { "$PY" -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[-9]^=0x10; open(p,'wb').write(b)" "$1"; }
  entry() { find c/obj -type f ! -name '.tmp-*' ! -name '*.meta' -printf '%s %p\n' | sort -n | "$1" -1 | cut -d' ' -f2; }
  flip "$(entry tail)"
  "$BIN/poprun-lite" m.popef --inputs $IN --outputs o4.npz --cache-dir c --log-level info 2>r4.log || die "run 4"
  grep -q "deleting bad cache entry" r4.log || die "corrupt object not detected"
  grep -q ", 1 compiled by LLVM" r4.log || die "corrupt object not recompiled: $(grep runtime r4.log)"
  cmp o1.npz o4.npz || die "outputs differ after a corrupt object"
  # a corrupted module entry (the smallest: the list of partition keys) falls back to the partitions
  flip "$(entry head)"
  "$BIN/poprun-lite" m.popef --inputs $IN --outputs o6.npz --cache-dir c --log-level info 2>r6.log || die "run 6"
  grep -q "deleting bad cache entry" r6.log || die "corrupt module entry not detected: $(cat r6.log)"
  grep -q ", 0 compiled by LLVM" r6.log || die "partitions not used: $(grep runtime r6.log)"
  grep -q "its bitcode was not read" r6.log && die "a corrupt module entry was used"
  cmp o1.npz o6.npz || die "outputs differ after a corrupt module entry"
  # --no-cache
  "$BIN/poprun-lite" m.popef --inputs $IN --outputs o5.npz --cache-dir c --no-cache --log-level info 2>r5.log
  grep -q "object cache" r5.log && die "--no-cache used the object cache"
  true
  ;;

remote_nginx)
  start_nginx
  reference "$CNN" ref.popef
  compile "$CNN" -o a.popef --cache-dir c1 --remote-cache "$(URL)" --log-level info 2>a.log
  grep -q "cache miss" a.log || die "first: $(cat a.log)"
  n=$(find nginx/root/popc/exe -type f | wc -l); [ "$n" = 1 ] || die "not uploaded ($n objects)"
  # a fresh machine: empty local dir, same remote
  compile "$CNN" -o b.popef --cache-dir c2 --remote-cache "$(URL)" --log-level info 2>b.log
  grep -q "cache hit" b.log || die "remote hit expected: $(cat b.log)"
  cmp b.popef ref.popef || die "remote hit differs"
  ln -sfn c2 c; [ "$(counter exe.remote_hits)" = 1 ] || die "remote_hits: $(cat c/stats)"
  [ "$(entries exe)" = 1 ] || die "remote hit not stored locally"
  # remote only (no local dir), via POPC_REMOTE_CACHE
  POPC_REMOTE_CACHE=$(URL) compile "$CNN" -o d.popef --log-level info 2>d.log
  grep -q "cache hit" d.log && cmp d.popef ref.popef || die "remote-only: $(cat d.log)"
  # JIT objects go to the remote too
  "$BIN/poprun-lite" ref.popef --preload --cache-dir c3 --remote-cache "$(URL)" >/dev/null || die "preload"
  find nginx/root/popc/obj -type f | grep -q . || die "objects not uploaded"
  "$BIN/poprun-lite" ref.popef --inputs "$SRC/samples/cnn/inputs.npz" --outputs o.npz --cache-dir c4 \
    --remote-cache "$(URL)" --log-level info 2>r.log || die "run"
  grep -q ", 0 compiled by LLVM" r.log || die "remote objects not used: $(grep runtime r.log)"
  ;;

remote_down)
  PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  reference "$CNN" ref.popef
  # (No wall-clock bound, which flakes on a loaded machine: one warning, then the
  # remote is skipped for the rest of the compile, is what keeps it fast.)
  compile "$CNN" -o a.popef --cache-dir c --remote-cache "http://127.0.0.1:$PORT/popc" 2>a.log
  grep -q "remote cache .*failed" a.log || die "no warning: $(cat a.log)"
  cmp a.popef ref.popef || die "wrong executable"
  [ "$(grep -c "remote cache" a.log)" = 1 ] || die "expected one warning, then the remote is skipped: $(cat a.log)"
  compile "$CNN" -o b.popef --cache-dir c --remote-cache "http://127.0.0.1:$PORT/popc" --log-level info 2>b.log
  grep -q "cache hit" b.log || die "local cache not used with the remote down"
  # unresolvable host
  compile "$MLP" -o m.popef --remote-cache "http://no-such-host.invalid/x" 2>m.log
  grep -q "remote cache" m.log || die "no warning for a bad host"
  ;;

remote_slow)
  # a server that accepts connections but never answers in time
  "$PY" - > port.txt <<'PY' &
import socket, sys, time, http.server, socketserver
class Slow(http.server.BaseHTTPRequestHandler):
    def do_GET(self): time.sleep(30)
    do_PUT = do_GET
    def log_message(self, *a): pass
s = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Slow)
s.daemon_threads = True
print(s.server_address[1], flush=True)
s.serve_forever()
PY
  SLOW=$!
  trap 'kill $SLOW 2>/dev/null' EXIT
  for _ in $(seq 50); do [ -s port.txt ] && break; sleep 0.1; done
  reference "$CNN" ref.popef
  # The server sleeps 30 s per request: a GET that ends in "Timeout" after the 1 s
  # limit, and no second request (the remote is skipped from then on), show the
  # compile was not held up, without a wall-clock bound that flakes under load.
  POPC_REMOTE_CACHE_TIMEOUT=1 compile "$CNN" -o a.popef --cache-dir c --remote-cache "http://127.0.0.1:$(cat port.txt)/popc" 2>a.log
  grep -q "remote cache .*GET failed: Timeout" a.log || die "no timeout warning: $(cat a.log)"
  [ "$(grep -c "remote cache" a.log)" = 1 ] || die "expected one timeout, then the remote is skipped: $(cat a.log)"
  cmp a.popef ref.popef || die "wrong executable"
  ;;

remote_5xx)
  start_nginx
  reference "$CNN" ref.popef
  compile "$CNN" -o a.popef --cache-dir c --remote-cache "http://127.0.0.1:$PORT/broken" 2>a.log
  grep -q "HTTP 500" a.log || die "no 5xx warning: $(cat a.log)"
  cmp a.popef ref.popef || die "wrong executable"
  [ "$(entries exe)" = 1 ] || die "local cache not written"
  ;;

remote_corrupt_object)
  start_nginx
  reference "$CNN" ref.popef
  compile "$CNN" -o a.popef --remote-cache "$(URL)"
  obj=$(find nginx/root/popc/exe -type f)
  [ -f "$obj" ] || die "not uploaded"
  cp "$obj" good.obj
  "$PY" -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[len(b)//2]^=1; open(p,'wb').write(b)" "$obj"
  compile "$CNN" -o b.popef --cache-dir c --remote-cache "$(URL)" --log-level info 2>b.log
  grep -q "is bad" b.log || die "corrupt remote object not reported: $(cat b.log)"
  cmp b.popef ref.popef || die "served a corrupt remote object"
  cmp "$obj" good.obj || die "the rebuild did not replace the corrupt remote object"
  # a truncated object and a foreign one
  truncate -s 100 "$obj"
  compile "$CNN" -o d.popef --remote-cache "$(URL)" 2>d.log
  grep -q "truncated" d.log && cmp d.popef ref.popef || die "truncated remote: $(cat d.log)"
  compile "$MLP" -o m.popef --remote-cache "$(URL)"
  other=$(find nginx/root/popc/exe -type f ! -path "$obj")
  cp "$other" "$obj"
  compile "$CNN" -o e.popef --remote-cache "$(URL)" 2>e.log
  grep -q "foreign" e.log && cmp e.popef ref.popef || die "foreign remote: $(cat e.log)"
  ;;

deterministic_compiles)
  # Every sample and a handful of ONNX backend node models, compiled in two
  # processes with different working directories, environments and path
  # spellings, give byte-identical executables (what makes the cache sound).
  models=()
  for m in "$SRC"/samples/*/model.onnx; do models+=("$m"); done
  for t in test_abs test_add_bcast test_averagepool_2d_pads test_basic_conv_with_padding \
           test_batchnorm_example test_gemm_default_matrix_bias test_maxpool_2d_default test_relu \
           test_softmax_axis_1 test_matmul_2d test_sigmoid test_conv_with_strides_padding; do
    f=/usr/share/libonnx-testdata/data/node/$t/model.onnx
    [ -f "$f" ] && models+=("$f")
  done
  mkdir -p one/deep/dir two
  n=0
  for m in "${models[@]}"; do
    name=$(basename "$(dirname "$m")")
    (cd one/deep/dir && env -i PATH=/usr/bin:/bin HOME=/nonexistent LANG=C TZ=UTC \
      "$BIN/popc-onnx" "$m" -o a.popef --no-cache 2>err) || { echo "skip $name: $(cat one/deep/dir/err)"; continue; }
    cp "$m" two/copy.onnx
    (cd two && env LANG=de_DE.UTF-8 TZ=Asia/Tokyo POPC_LOG_LEVEL=debug OMP_NUM_THREADS=1 TMPDIR=/tmp \
      "$BIN/popc-onnx" ./copy.onnx -o b.popef --no-cache 2>/dev/null) || die "$name: second compile failed"
    cmp one/deep/dir/a.popef two/b.popef || die "$name: two compiles differ"
    n=$((n + 1))
  done
  echo "$n models compiled twice, byte-identical"
  [ $n -ge 8 ] || die "too few models compiled ($n)"
  ;;

popc_cache_cli)
  "$BIN/popc-cache" --help > h.txt || die "--help"
  grep -q "verify" h.txt && grep -q "evict" h.txt && grep -q "POPC_CACHE_DIR" h.txt || die "help: $(cat h.txt)"
  "$BIN/popc-cache" stats 2>e.txt; [ $? = 1 ] || die "no dir must fail"
  grep -q "POPC_CACHE_DIR" e.txt || die "no-dir error: $(cat e.txt)"
  "$BIN/popc-cache" 2>e2.txt; [ $? = 1 ] || die "no subcommand must fail"
  compile "$MLP" -o m.popef --cache-dir c
  POPC_CACHE_DIR=c "$BIN/popc-cache" stats | grep -q "in 1 entries" || die "stats via env"
  "$BIN/popc-cache" evict --cache-dir c 2>e3.txt; [ $? = 1 ] || die "evict without --max-size"
  "$BIN/popc-cache" evict --cache-dir c --max-size 12Q 2>e4.txt; [ $? = 1 ] || die "bad size accepted"
  grep -q "K, M, G" e4.txt || die "size error: $(cat e4.txt)"
  "$BIN/popc-onnx" "$MLP" -o x.popef --cache-dir c --cache-max-size nope 2>e5.txt; [ $? = 1 ] || die "bad max size"
  "$BIN/popc-cache" clean --cache-dir c | grep -q "removed 1 entries" || die "clean"
  [ "$(entries exe)" = 0 ] || die "clean left entries"
  [ -f c/CACHEDIR.TAG ] || die "clean removed the cache's mark"
  "$BIN/popc-cache" frob --cache-dir c 2>e6.txt; [ $? = 1 ] || die "unknown subcommand accepted"
  grep -q "unknown subcommand 'frob'" e6.txt && grep -q "stats, clean, verify, evict" e6.txt || die "frob: $(cat e6.txt)"
  # Not a cache: a user's directory holding files of every name the cache uses.
  mkdir notcache
  for f in stats stats.lock stats.tmp-1 evict.lock evict.lock.walk exe obj CACHEDIR.TAG; do echo "mine $f" > notcache/$f; done
  (cd notcache && sha256sum * > ../before.sum)
  for cmd in stats clean verify "evict --max-size 0"; do
    "$BIN/popc-cache" $cmd --cache-dir notcache 2>e7.txt; [ $? = 1 ] || die "popc-cache $cmd ran on a user's directory"
    [ "$(wc -l < e7.txt)" = 1 ] && grep -q "not a popc cache directory" e7.txt || die "$cmd: $(cat e7.txt)"
  done
  "$BIN/popc-onnx" "$MLP" -o y.popef --cache-dir notcache 2>e8.txt; [ $? = 1 ] || die "popc-onnx used a user's directory"
  grep -q "not a popc cache directory" e8.txt || die "popc-onnx: $(cat e8.txt)"
  "$BIN/poprun-lite" m.popef --inputs "$SRC/samples/mlp/inputs.npz" --cache-dir notcache >/dev/null 2>e9.txt
  [ $? != 0 ] && grep -q "not a popc cache directory" e9.txt || die "poprun-lite: $(cat e9.txt)"
  (cd notcache && sha256sum -c --quiet ../before.sum) || die "a user's file changed"
  [ "$(ls -A notcache | wc -l)" = 8 ] || die "files appeared in a user's directory: $(ls -A notcache)"
  # An empty directory becomes a cache; popc-cache alone never makes one.
  mkdir empty
  "$BIN/popc-cache" stats --cache-dir empty 2>e10.txt; [ $? = 1 ] || die "stats on an empty directory"
  [ -z "$(ls -A empty)" ] || die "popc-cache wrote into an empty directory"
  compile "$MLP" -o z.popef --cache-dir empty
  [ -f empty/CACHEDIR.TAG ] && head -1 empty/CACHEDIR.TAG | grep -q "^Signature: 8a477f597d28d172789f06886806bc55$" \
    || die "no cache tag"
  ;;

*) die "unknown case $CASE" ;;
esac

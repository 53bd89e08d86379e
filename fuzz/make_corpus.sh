#!/usr/bin/env bash
# Regenerates fuzz/corpus/<target>/ (the committed seed corpora):
#   npy     fuzz/make_seeds.py arrays + every member of samples/*/*.npz
#   npz     fuzz/make_seeds.py archives + samples/*/{inputs,expected}.npz
#   onnx    samples/*/model.onnx + fuzz/make_seeds.py tiny models
#   popef   popc-onnx of samples/mlp and of the tiny models
#   bitcode the code modules inside those popef files
#   ir      test/filecheck/*/*.ir + the mlp sample's IR dump
#
#   fuzz/make_corpus.sh [BIN_DIR]     # BIN_DIR holds popc-onnx (default build/bin)
#
# Needs Debian's /usr/bin/python3 (numpy, onnx). Keeps every file small: the whole
# corpus must stay under 2 MB and no popef over 200 KB.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/bin}
PY=/usr/bin/python3
C=fuzz/corpus
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# Everything is regenerated except regress-* files (inputs that once crashed a
# reader), the hand-made cache_entry seeds and the hostile-* popefs (from
# test/hardening/make_hostile, copied by hand).
[ -d "$C" ] && find "$C" -type f ! -name 'regress-*' ! -name 'hostile-*' ! -path '*/cache_entry/*' -delete
mkdir -p "$C"/{npy,npz,onnx,popef,bitcode,loader,cache_entry,ir}
"$PY" fuzz/make_seeds.py "$TMP"

cp "$TMP"/npy/*.npy "$C/npy/"
cp "$TMP"/npz/*.npz "$C/npz/"
for s in samples/*/; do
  name=$(basename "$s")
  for f in inputs expected; do
    [ -f "$s/$f.npz" ] && cp "$s/$f.npz" "$C/npz/${name}_$f.npz"
  done
done
# Members of the sample archives as standalone .npy files.
"$PY" - "$C" <<'PYEOF'
import glob, os, sys, zipfile
out = sys.argv[1]
for path in sorted(glob.glob("samples/*/*.npz")):
    tag = path.split("/")[1] + "_" + os.path.basename(path)[:-4]
    with zipfile.ZipFile(path) as z:
        for name in sorted(z.namelist()):
            with open(f"{out}/npy/{tag}_{name}", "wb") as f:
                f.write(z.read(name))
PYEOF

cp "$TMP"/onnx/*.onnx "$C/onnx/"
for s in samples/*/model.onnx; do
  cp "$s" "$C/onnx/$(basename "$(dirname "$s")").onnx"
done

# popef: the mlp sample and the tiny models (cnn's popef is left out for size),
# with the schedule uncompressed, so that mutations reach the flatbuffer's
# checks; and the mlp once compressed (the container's checks).
for m in samples/mlp/model.onnx "$TMP"/onnx/*.onnx; do
  name=$(basename "$m" .onnx)
  [ "$name" = model ] && name=mlp
  "$BIN/popc-onnx" "$m" -o "$C/popef/$name.popef" --compression 0
done
"$BIN/popc-onnx" samples/mlp/model.onnx -o "$C/popef/mlp-zstd.popef"

# loader: the small compiled models (the loader target is slower per input).
for name in add relu softmax_reshape gemm_tanh conv_pool; do
  [ -f "$C/popef/$name.popef" ] && cp "$C/popef/$name.popef" "$C/loader/"
done

# ir: the golden test files and the IR of the mlp sample before the passes.
cp test/filecheck/*/*.ir "$C/ir/"
"$BIN/popc-onnx" samples/mlp/model.onnx -o "$TMP/mlp.popef" --no-cache --dump-ir "$TMP/ir"
cp "$TMP/ir/00_FWD0.ir.txt" "$C/ir/mlp_fwd0.ir"

# Bitcode modules: each "BC\xC0\xDE" blob inside a popef is a flatbuffers
# [ubyte] vector, whose little-endian length is the 4 bytes before it.
"$PY" - "$C" <<'PYEOF'
import glob, hashlib, os, struct, sys
out = sys.argv[1]
seen = set()
for path in sorted(glob.glob(f"{out}/popef/*.popef")):
    data = open(path, "rb").read()
    name = os.path.basename(path)[:-6]
    pos, n = data.find(b"BC\xc0\xde"), 0
    while pos >= 4:
        (length,) = struct.unpack_from("<I", data, pos - 4)
        blob = data[pos:pos + length]
        if 4 < length <= len(data) - pos and hashlib.sha1(blob).digest() not in seen:
            seen.add(hashlib.sha1(blob).digest())
            open(f"{out}/bitcode/{name}_{n}.bc", "wb").write(blob)
            n += 1
        pos = data.find(b"BC\xc0\xde", pos + 4)
PYEOF

big=$(find "$C" -name '*.popef' -size +200k)
[ -z "$big" ] || { echo "popef seeds over 200 KB: $big" >&2; exit 1; }
total=$(du -sb "$C" | cut -f1)
echo "corpus: $(find "$C" -type f | wc -l) files, $total bytes"
[ "$total" -lt 2000000 ] || { echo "corpus over 2 MB" >&2; exit 1; }

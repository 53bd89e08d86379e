#!/usr/bin/env bash
# Runs the RUN lines of one golden test file, as LLVM's lit does:
#   test/filecheck/run.sh FILE BIN_DIR
# Each "// RUN: cmd" line (a line ending in '\' continues on the next RUN line)
# runs under bash with pipefail after these substitutions:
#   %s -> FILE   popc-opt -> BIN_DIR/popc-opt   FileCheck -> FileCheck-19   not -> LLVM's not
# The test fails on the first RUN line that exits non-zero, printing it.
set -euo pipefail
file=$1
bin=$2
filecheck=$(command -v FileCheck-19 || true)
[ -x /usr/lib/llvm-19/bin/FileCheck ] && filecheck=/usr/lib/llvm-19/bin/FileCheck
not=/usr/lib/llvm-19/bin/not
if [ -z "$filecheck" ] || [ ! -x "$not" ]; then
  echo "run.sh: FileCheck-19 or LLVM's 'not' is missing: install llvm-19-tools (tools/install-deps.sh)" >&2
  exit 1
fi
commands=()
current=""
while IFS= read -r line; do
  case "$line" in
    *"// RUN:"*) ;;
    *) continue ;;
  esac
  body=${line#*// RUN:}
  if [[ "$body" == *'\' ]]; then
    current+="${body%\\} "
    continue
  fi
  commands+=("$current$body")
  current=""
done < "$file"
if [ ${#commands[@]} -eq 0 ]; then
  echo "run.sh: $file has no '// RUN:' line" >&2
  exit 1
fi
for cmd in "${commands[@]}"; do
  expanded=$(printf '%s' "$cmd" | sed -e "s|%s|$file|g" \
    -e "s|\\bpopc-opt\\b|$bin/popc-opt|g" \
    -e "s|\\bFileCheck\\b|$filecheck|g" \
    -e "s|\\bnot\\b|$not|g")
  echo "RUN: $expanded"
  if ! bash -o pipefail -c "$expanded"; then
    echo "run.sh: FAILED: $file: $cmd" >&2
    exit 1
  fi
done

#!/usr/bin/env bash
# make coverage-gpu's second half: with libdistbind, dist-bind-check and the
# GPU tests built with gcov counters into BUILD (make coverage-gpu does
# that), run every fake-driver test of tests/gpu against them, then report
# lib/runtime's GPU files: line coverage, and each CUDA/NCCL call site (a
# call through the loaded cudart/nccl tables) with how often it ran.  Exit 1
# when a test failed or a call site was never reached.
#
#   tests/gpu/coverage.sh build/cov
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=$(cd "${1:?usage: coverage.sh BUILD}" && pwd)
export DIST_BIND_BUILD=$BUILD
find "$BUILD" -name '*.gcda' -delete
rc=0
for t in tests/gpu/t_fake_*.sh; do
    # smoke.sh builds a tree of its own; it is covered by the others' paths.
    [ "$t" = tests/gpu/t_fake_smoke.sh ] && continue
    if timeout -k 10 600 "$t" >"$BUILD/$(basename "$t" .sh).log" 2>&1; then
        echo "coverage: ran $t"
    else
        echo "coverage: $t FAILED (log: $BUILD/$(basename "$t" .sh).log)"
        rc=1
    fi
done
out=$BUILD/gcov
rm -rf "$out" && mkdir -p "$out"
files=(lib/runtime/gpu/device.cc lib/runtime/gpu/loaders.cc lib/runtime/gpu/nccl.cc lib/runtime/gpu/nccl_check.cc)
for f in "${files[@]}"; do
    (cd "$out" && gcov -j -o "$BUILD/pic/$(dirname "$f")" "$ROOT/$f" >/dev/null 2>&1) || { echo "coverage: gcov failed on $f"; rc=1; }
done
/usr/bin/python3 - "$out" "$ROOT" "${files[@]}" <<'PY' || rc=1
import gzip, json, os, re, sys
out, root, files = sys.argv[1], sys.argv[2], sys.argv[3:]
counts = {}
for name in os.listdir(out):
    if name.endswith(".gcov.json.gz"):
        for f in json.load(gzip.open(os.path.join(out, name)))["files"]:
            path = os.path.relpath(os.path.join(root, f["file"]), root) if not os.path.isabs(f["file"]) else os.path.relpath(f["file"], root)
            c = counts.setdefault(path, {})
            for l in f["lines"]:
                c[l["line_number"]] = c.get(l["line_number"], 0) + l["count"]
# Calls through the tables (cu->SetDevice(...)), and the error-text calls
# inside Cudart::error and Nccl::error.
call = re.compile(r"(?:\b(?:cu|cu_|nc|nc_)->|(?<![\w>.])(?=Get(?:ErrorName|ErrorString|LastError)\b))([A-Z]\w*)\(")
missed = 0
print("coverage of lib/runtime's GPU files against the fake driver")
for f in files:
    c = counts.get(f, {})
    src = open(os.path.join(root, f)).read().splitlines()
    hit = sum(1 for n in c.values() if n)
    never = sorted(l for l, n in c.items() if not n)
    print("%-28s lines %d/%d (%.1f%%)%s" % (f, hit, len(c), 100.0 * hit / max(1, len(c)),
                                           "; never run: " + " ".join(map(str, never)) if never else ""))
    for i, text in enumerate(src, 1):
        for m in call.finditer(text):
            n = c.get(i)
            mark = "MISSED" if not n else ""
            if not n:
                missed += 1
            print("  %s:%-4d %-32s %8s %s" % (os.path.basename(f), i, m.group(1), n if n is not None else "-", mark))
print("coverage: %s" % ("every CUDA/NCCL call site reached" if not missed else "%d call site(s) never reached" % missed))
sys.exit(1 if missed else 0)
PY
exit $rc

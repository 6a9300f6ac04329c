#!/usr/bin/env bash
# tests/gpu/smoke.sh, the one command for a GPU machine, run here against
# the fake driver laid out as pip installs CUDA and NCCL
# (site-packages/nvidia/cuda_runtime/{include,lib},
# site-packages/nvidia/nccl/{include,lib}), with this machine's own CUDA
# hidden in a mount namespace: it must find them there, build, run every
# part and print its summary; and say so when hwloc is missing, skipping
# dist-bind-check.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
need_built "$BUILD/fake/libcudart.so.13" "$BUILD/fake/libnccl.so.2" "$BUILD/fake/nvidia-smi"
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null; then
    echo "FAIL: needs root and unshare (a mount namespace hides this machine's CUDA)"
    exit 1
fi
cuda_inc=$(dirname "$(ls /usr/local/cuda*/include/cuda_runtime_api.h 2>/dev/null | head -1)")
nccl_inc=$(dirname "$(ls /usr/local/cuda*/include/nccl.h /usr/include/nccl.h 2>/dev/null | head -1)")
[ -f "$cuda_inc/cuda_runtime_api.h" ] && [ -f "$nccl_inc/nccl.h" ] || { echo "FAIL: no CUDA/NCCL headers to lay out"; exit 1; }

site=$(mktemp -d /tmp/fake-site.XXXXXX)
trap 'rm -rf "$site"' EXIT
rt=$site/nvidia/cuda_runtime nc=$site/nvidia/nccl
mkdir -p "$rt/include" "$rt/lib" "$nc/include" "$nc/lib"
# The headers are copied: the namespace below hides where they live.
cp -r "$cuda_inc"/. "$rt/include/"
rm -rf "$rt/include/nccl.h" "$rt/include/nccl_"*
cp "$nccl_inc/nccl.h" "$nc/include/"
cp "$BUILD/fake/libcudart.so.13" "$BUILD/fake/libfakegpu.so" "$rt/lib/"
cp "$BUILD/fake/libnccl.so.2" "$BUILD/fake/libfakegpu.so" "$nc/lib/"

# What smoke.sh must not find: CUDA under /usr/local (and the loader's
# cache entries into it).
hide='for d in /usr/local/cuda-*; do [ -d "$d" ] && mount -t tmpfs none "$d"; done; exec "$@"'
smoke() {
    env -u CUDA_HOME -u CUDA_PATH -u NCCL_HOME -u CONDA_PREFIX -u LD_LIBRARY_PATH PATH="$BUILD/fake:$PATH" \
        PYTHONPATH="$site" FAKEGPU_DEVICES=1 FAKEGPU_STATE="$site/state" SMOKE_BUILD="$BUILD/smoke-fake" \
        SMOKE_ALLREDUCE_BYTES=1048576 "$@" unshare --mount --propagation private sh -c "$hide" sh \
        timeout -k 10 600 "$ROOT/tests/gpu/smoke.sh" 2>&1
}
out=$(smoke)
rc=$?
echo "$out"
[ $rc = 0 ] && ok "smoke.sh exits 0" || bad "smoke.sh exits $rc"
grep -q "^smoke: CUDA 13 headers in $rt/include, libcudart in $rt/lib; NCCL headers in $nc/include, libnccl in $nc/lib$" \
    <<<"$out" && ok "it found CUDA and NCCL in pip's folders" || bad "found elsewhere"
summary=$(tail -1 <<<"$out")
[[ $summary =~ ^smoke:\ 9\ passed,\ 0\ failed\ in\ [0-9]+\ s\;\ NCCL\ set-up,\ world\ of\ one:\ libdistbind\ [0-9.]+\ ms,\ bare\ ncclCommInitRank\ [0-9.]+\ ms,\ ratio\ [0-9.]+\ \(median\ of\ 20\)\;\ dist-bind-check\ all-reduce:\ 1048576\ bytes\ x\ 20\ on\ 1\ rank,\ result\ correct ]] \
    && ok "one summary line: every part passed, with both figures" || bad "summary: $summary"

# Without hwloc: dist-bind-check is not built, and smoke.sh says so.
out=$(smoke PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH=)
rc=$?
[ $rc = 0 ] && ok "without hwloc smoke.sh exits 0" || { bad "without hwloc smoke.sh exits $rc"; echo "$out"; }
grep -q "^smoke: hwloc not found (pkg-config hwloc): dist-bind-check is not built, its tests are skipped" <<<"$out" \
    && ok "and says it skips dist-bind-check" || bad "no hwloc message: $out"
[[ $(tail -1 <<<"$out") == "smoke: 7 passed, 0 failed, 1 skipped (t_check_world1: no hwloc) in "* ]] \
    && ok "the summary counts the skip" || bad "summary: $(tail -1 <<<"$out")"
done_

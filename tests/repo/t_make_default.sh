#!/usr/bin/env bash
# `make` with no goal (the README's and the admin guide's first step)
# builds the plugin, the library and the tool: a copy of the checkout's
# tracked files, as a fresh clone has them, built with plain `make`.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/dist-bind-make.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
git -C "$root" ls-files -z | (cd "$root" && tar --null -T - -cf -) | tar -xf - -C "$tmp"
rc=0
make -C "$tmp" -j2 >"$tmp/make.log" 2>&1 || rc=$?
[ $rc -eq 0 ] || { tail -n 20 "$tmp/make.log"; echo "FAIL: plain make exited $rc"; exit 1; }
fail=0
for f in build/spank_dist_bind.so build/libdistbind.so build/dist-bind-check; do
    if [ -f "$tmp/$f" ]; then echo "ok: make built $f"; else echo "FAIL: plain make did not build $f"; fail=1; fi
done
exit $fail

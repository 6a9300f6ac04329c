#!/usr/bin/env bash
# Test knobs (variables that point the plugin at files the tests make, such
# as DIST_BIND_NVIDIA_PROC) exist only in test builds: the plugin and the
# library that ship do not contain their names, so no job's environment can
# steer them.  The test build of the plugin does (so this check can fail).
set -euo pipefail
b=$(dirname "$0")/../../build
knobs=(DIST_BIND_NVIDIA_PROC)
for f in "$b/spank_dist_bind.so" "$b/libdistbind.so" "$b/test/spank_dist_bind.so"; do
    [ -f "$f" ] || { echo "FAIL: not built: $f"; exit 1; }
done
rc=0
for k in "${knobs[@]}"; do
    for f in "$b/spank_dist_bind.so" "$b/libdistbind.so"; do
        if strings -a "$f" | grep "$k" >/dev/null; then echo "FAIL: $f reads the test knob $k"; rc=1; fi
    done
    strings -a "$b/test/spank_dist_bind.so" | grep "$k" >/dev/null || { echo "FAIL: the test plugin lacks $k"; rc=1; }
done
[ $rc -eq 0 ] && echo "ok: no test knob in the shipped plugin or library (${knobs[*]})"
exit $rc

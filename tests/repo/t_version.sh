#!/usr/bin/env bash
# One version source: VERSION (the release) and DB_ABI in the Makefile
# (libdistbind's binary interface).  Everything that carries either agrees.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${DIST_BIND_BUILD:-build}
fail() { echo "FAIL: $*"; exit 1; }
v=$(cat VERSION)
[[ $v =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "VERSION is '$v', expected MAJOR.MINOR.PATCH"
abi=$(sed -n 's/^DB_ABI *:= *//p' Makefile)
[[ $abi =~ ^[0-9]+$ ]] || fail "Makefile's DB_ABI is '$abi', expected a number"

top=$(sed -n '1s/^dist-bind (\([^)]*\)).*/\1/p' packaging/debian/changelog)
[ "$top" = "$v" ] || fail "packaging/debian/changelog's top entry is $top, VERSION is $v"
grep -q '^Version: *%{dist_bind_version}$' packaging/rpm/dist-bind.spec ||
    fail "the RPM spec's Version is not %{dist_bind_version} (make rpm passes VERSION)"
grep -qx "Package: libdistbind$abi" packaging/debian/control || fail "debian/control has no package libdistbind$abi"
grep -q "^DISTBIND_$abi\.0 {" lib/runtime/distbind.map || fail "distbind.map's symbol version is not DISTBIND_$abi.0"

so=$(readelf -d "$B/libdistbind.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$so" = "libdistbind.so.$abi" ] || fail "libdistbind.so's soname is $so, expected libdistbind.so.$abi"
h=$B/include/distbind_version.h
grep -qx "#define DISTBIND_VERSION_STRING \"$v\"" "$h" || fail "$h does not say $v"
IFS=. read -r ma mi pa <<<"$v"
for x in "MAJOR $ma" "MINOR $mi" "PATCH $pa"; do
    grep -qx "#define DISTBIND_VERSION_${x% *} ${x#* }" "$h" || fail "$h: DISTBIND_VERSION_${x% *} is not ${x#* }"
done
grep -q '#include "distbind_version.h"' lib/runtime/include/distbind.h || fail "distbind.h does not include distbind_version.h"
strings -a "$B/libdistbind.so" | grep -x "$v" >/dev/null || fail "libdistbind.so does not carry $v (distbind_version())"
strings -a "$B/spank_dist_bind.so" | grep -F "dist-bind $v loaded" >/dev/null || fail "the plugin does not carry $v (its slurmd log line, \"dist-bind $v loaded\")"
echo "ok: VERSION $v and ABI $abi agree everywhere"

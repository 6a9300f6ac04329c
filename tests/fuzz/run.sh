#!/usr/bin/env bash
# `make fuzz`: each harness for SECONDS, one after the other, starting from
# the checked-in corpus (tests/fuzz/corpus/NAME, read only) and what earlier
# runs found (build/fuzz/corpus/NAME).  A crash or a broken invariant leaves
# its input in build/fuzz/findings/ and fails the run; turn it into a
# reproducer with `cp build/fuzz/findings/NAME-crash-* tests/fuzz/repro/NAME/`.
#
#   tests/fuzz/run.sh SECONDS NAME...
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=$1
shift
mkdir -p build/fuzz/findings
rc=0
for name in "$@"; do
    mkdir -p "build/fuzz/corpus/$name"
    echo "== fuzz_$name for ${secs}s"
    build/fuzz/"$name" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
        -artifact_prefix="build/fuzz/findings/$name-" "build/fuzz/corpus/$name" "tests/fuzz/corpus/$name" \
        >"build/fuzz/$name.log" 2>&1
    r=$?
    grep -E "^stat::number_of_executed_units|^stat::new_units_added" "build/fuzz/$name.log" | sed 's/^/   /'
    if [ $r -ne 0 ]; then
        rc=1
        echo "   FOUND something (exit $r): see build/fuzz/$name.log"
        grep -E "ERROR|fuzz check failed|SUMMARY|runtime error" "build/fuzz/$name.log" | head -5 | sed 's/^/   | /'
    else
        echo "   nothing found"
    fi
done
ls build/fuzz/findings/ 2>/dev/null | sed 's/^/finding: /'
exit $rc

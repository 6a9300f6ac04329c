#!/usr/bin/env bash
# The test runner behind `make check`.
#
#   tests/run.sh [LEVEL|NAME ...]     (default: every test)
#
# Runs, in this order: test binaries built into build/tests/ (unit tests
# under ASan/UBSan), then the scripts tests/<level>/t_*.{sh,py} of the levels
# repo, unit, topology, exchange, pkg, lab, gpu.  Exit status 77 means skipped.
# With DIST_BIND_CI=1 (set by .ci/run) a skip is a failure everywhere but in
# tests/gpu, which needs a GPU that CI does not have.
#
# Lab tests run once per lab configuration they name in a line
# "# lab-configs: plain cgroup" (none: plain only).  "cgroup" is the lab
# with task/cgroup and ConstrainDevices=yes; each run gets the
# configuration in DIST_BIND_LAB_CONFIG and is reported as
# lab/t_name[config].  DIST_BIND_LAB_CONFIGS limits the configurations run
# (default: all).
#
# Lab and package tests also run on each other Slurm release in
# DIST_BIND_LAB_RELEASES (default: every release tests/lab/release.sh
# knows, e.g. 24.11 and 26.05; empty: none), inside that release's root:
# configuration "24.11" for plain, "24.11,cgroup" for cgroup, reported as
# lab/t_name[24.11,cgroup].  A test with a line "# lab-releases: native"
# runs on this machine's release only.  The releases between the oldest
# and the newest (DIST_BIND_LAB_PARTIAL, default 24.11) run only the tests
# whose behaviour differs by release, marked "# lab-releases: every", and
# the package tests.  A line "# lab-releases: 26.05" runs a test on that
# release only (behaviour older releases lack).
#
# Each test's output goes to build/test-logs/; a failing test's failed
# checks (lines "FAIL ...") and its tail are printed.  The last line is
# the summary: "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
LOGS=$ROOT/build/test-logs
mkdir -p "$LOGS"
TIMEOUT=${DIST_BIND_TEST_TIMEOUT:-900}
LEVELS=(repo unit topology exchange pkg lab gpu)
LAB_CONFIGS=(${DIST_BIND_LAB_CONFIGS:-plain cgroup})
LAB_RELEASES=(${DIST_BIND_LAB_RELEASES-$(tests/lab/release.sh list)})
PARTIAL_RELEASES=" ${DIST_BIND_LAB_PARTIAL-24.11} "

# The configurations a lab test runs in, among those enabled.
lab_configs() {
    local want c
    want=$(sed -n 's/^# lab-configs: *//p' "$1" | head -1)
    for c in ${want:-plain}; do
        case " ${LAB_CONFIGS[*]} " in *" $c "*) echo "$c" ;; esac
    done
}

# The releases a test runs on, from its "# lab-releases:" line: "native"
# (this machine's only), "every" (this machine's and every other), release
# numbers (only those, e.g. "26.05" for what older releases lack); no line:
# this machine's and every other but the partial ones.  "native" is printed
# for this machine's.
test_releases() {
    local words r
    words=$(sed -n 's/^# lab-releases: *//p' "$1" | head -1 | sed 's/(.*//')
    case " $words " in
        *" native "*) echo native; return 0 ;;
        *" every "*) echo native; printf '%s\n' ${LAB_RELEASES[@]+"${LAB_RELEASES[@]}"}; return 0 ;;
    esac
    if [[ "$words" =~ [0-9]+\.[0-9]+ ]]; then
        for r in ${LAB_RELEASES[@]+"${LAB_RELEASES[@]}"}; do
            case " $words " in *" $r "*) echo "$r" ;; esac
        done
        return 0
    fi
    echo native
    for r in ${LAB_RELEASES[@]+"${LAB_RELEASES[@]}"}; do
        [[ "$1" == */lab/* && "$PARTIAL_RELEASES" == *" $r "* ]] || echo "$r"
    done
}

# The configurations of a test on each of its releases: "plain", "cgroup",
# "24.11", "24.11,cgroup".
release_configs() {
    local r c
    for r in $(test_releases "$1"); do
        for c in ${2:-plain}; do
            if [ "$r" = native ]; then echo "$c"
            elif [ "$c" = plain ]; then echo "$r"
            else echo "$r,$c"; fi
        done
    done
}

# Entries are LEVEL:PATH or LEVEL:PATH@CONFIG (lab tests).
tests=()
for level in "${LEVELS[@]}"; do
    for b in "$ROOT"/build/tests/"$level"_*; do
        [ -x "$b" ] && [ -f "$b" ] && [[ "$b" != *.o ]] && tests+=("$level:$b")
    done
    for s in "$ROOT"/tests/"$level"/t_*.sh "$ROOT"/tests/"$level"/t_*.py; do
        [ -f "$s" ] || continue
        if [ "$level" = lab ]; then
            for c in $(release_configs "$s" "$(lab_configs "$s")"); do
                tests+=("$level:$s@$c")
            done
        elif [ "$level" = pkg ]; then
            for c in $(release_configs "$s"); do
                if [ "$c" = plain ]; then tests+=("$level:$s"); else tests+=("$level:$s@$c"); fi
            done
        else
            tests+=("$level:$s")
        fi
    done
done

selected=()
for t in "${tests[@]}"; do
    if [ $# -eq 0 ]; then selected+=("$t"); continue; fi
    for want in "$@"; do
        name=${t#*:}; config=""
        [[ "$name" == *@* ]] && config=${name##*@}
        name=$(basename "${name%@*}")
        if [ "${t%%:*}" = "$want" ] || [[ "$name" == *"$want"* ]] || [ "$config" = "$want" ] \
            || [[ ",$config," == *",$want,"* ]]; then
            selected+=("$t"); break
        fi
    done
done

pass=0 fail=0 skip=0 failed=()
for t in "${selected[@]}"; do
    level=${t%%:*} path=${t#*:} config=""
    if [[ "$path" == *@* ]]; then config=${path##*@}; path=${path%@*}; fi
    name=$(basename "$path"); name=${name%.*}
    log=$LOGS/$level-$name.log
    if [ -n "$config" ] && [ "$config" != plain ]; then
        name="$name[$config]"
        log=$LOGS/$level-$name.log
    fi
    start=${EPOCHREALTIME/./}
    case $path in
        *.py) cmd=(env PYTHONUNBUFFERED=1 DIST_BIND_LAB_CONFIG="${config:-plain}" /usr/bin/python3 "$path") ;;
        *) cmd=(env DIST_BIND_LAB_CONFIG="${config:-plain}" "$path") ;;
    esac
    timeout -k 10 "$TIMEOUT" "${cmd[@]}" >"$log" 2>&1
    rc=$?
    el=$(( ${EPOCHREALTIME/./} - start ))
    secs=$(( el / 1000000 )).$(( el / 100000 % 10 ))
    if [ $rc -eq 77 ] && { [ -z "${DIST_BIND_CI:-}" ] || [ "$level" = gpu ]; }; then
        skip=$((skip + 1))
        printf 'SKIP %-28s %6ss  %s\n' "$level/$name" "$secs" "$(grep -m1 -i 'skip' "$log" || true)"
    elif [ $rc -eq 0 ]; then
        pass=$((pass + 1))
        printf 'PASS %-28s %6ss\n' "$level/$name" "$secs"
    else
        fail=$((fail + 1)); failed+=("$level/$name")
        [ $rc -eq 77 ] && echo "(skipped, which counts as a failure under DIST_BIND_CI)" >>"$log"
        [ $rc -eq 124 ] && echo "(timed out after ${TIMEOUT}s)" >>"$log"
        printf 'FAIL %-28s %6ss  (exit %d, log %s)\n' "$level/$name" "$secs" "$rc" "${log#$ROOT/}"
        # The failed checks first (a long log's tail may not hold them),
        # then the tail.
        grep -m 10 '^ *FAIL ' "$log" | sed 's/^/    ! /'
        tail -n 40 "$log" | sed 's/^/    | /'
    fi
done
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "check: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] && [ $((pass + skip)) -gt 0 ]

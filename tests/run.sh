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
# "# lab-configs: plain cgroup cgroup2" (none: plain only).  "cgroup" is
# the lab with task/cgroup and ConstrainDevices=yes on cgroup v1, "cgroup2"
# the same on cgroup v2; each run gets the configuration in
# DIST_BIND_LAB_CONFIG and is reported as lab/t_name[config].
# DIST_BIND_LAB_CONFIGS limits the configurations run (default: all).
#
# The cgroup2 runs happen inside the cgroup v2 guest of their release
# (tests/lab/kit/guest.sh: a virtual machine; DIST_BIND_GUEST_RELEASES, default
# 22.05, 24.11 and 26.05, says which releases): one boot per release runs all of
# that release's selected cgroup2 tests with this script inside, and each
# test's result is reported here as any other (lab/t_seed[cgroup2],
# lab/t_seed[26.05,cgroup2]).  Where no guest can run, each is a skip
# that says why.
#
# DIST_BIND_TESTS="LEVEL:PATH@CONFIG ..." runs exactly those entries.
#
# Lab and package tests also run on each other Slurm release in
# DIST_BIND_LAB_RELEASES (default: every release tests/lab/kit/release.sh
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
LAB_CONFIGS=(${DIST_BIND_LAB_CONFIGS:-plain cgroup cgroup2})
LAB_RELEASES=(${DIST_BIND_LAB_RELEASES-$(tests/lab/kit/release.sh list)})
PARTIAL_RELEASES=" ${DIST_BIND_LAB_PARTIAL-24.11} "
GUEST_RELEASES=" ${DIST_BIND_GUEST_RELEASES-22.05 24.11 26.05} "
if [ -n "${DIST_BIND_IN_GUEST:-}" ]; then
    NATIVE=$DIST_BIND_IN_GUEST
else
    NATIVE=$(tests/lab/kit/release.sh native 2>/dev/null || true)
fi

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
        for c in ${2-plain}; do
            # cgroup2 only on the releases with a guest.
            if [ "$c" = cgroup2 ] && [[ "$GUEST_RELEASES" != *" ${r/native/$NATIVE} "* ]]; then continue; fi
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
[ -z "${DIST_BIND_TESTS:-}" ] || tests=()
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

[ -z "${DIST_BIND_TESTS:-}" ] || read -r -a selected <<<"$DIST_BIND_TESTS"

# The name a test is reported by: lab/t_seed[26.05,cgroup].
entry_name() {
    local level=${1%%:*} path=${1#*:} config="" name
    if [[ "$path" == *@* ]]; then config=${path##*@}; path=${path%@*}; fi
    name=$(basename "$path"); name=${name%.*}
    if [ -n "$config" ] && [ "$config" != plain ]; then name="$name[$config]"; fi
    echo "$level/$name"
}

# The release of a cgroup2 entry (this machine's for a bare "cgroup2"), or
# nothing for any other entry; never inside the guest, where they run.
guest_release() {
    local config
    [ -z "${DIST_BIND_IN_GUEST:-}" ] || return 0
    [[ "$1" == *@* ]] || return 0
    config=${1##*@}
    case ",$config," in *,cgroup2,*) ;; *) return 0 ;; esac
    config=${config/cgroup2/}; config=${config//,/}
    echo "${config:-$NATIVE}"
}

pass=0 fail=0 skip=0 failed=()
# One boot of REL's guest runs the cgroup2 entries given, with this script
# inside; its output goes to build/test-logs/guest-REL.log, its exit status
# (77: no guest can run here) to guest-REL.rc, its time to guest-REL.secs.
guest_boot() {
    local rel=$1 glog=$LOGS/guest-$1.log n=$(( $# - 1 )) start rc
    shift
    rm -f "$LOGS/guest-$rel.rc" "$LOGS/guest-$rel.secs"
    start=${EPOCHREALTIME/./}
    tests/lab/kit/guest.sh run "$rel" --timeout $((600 + TIMEOUT * n)) \
        env DIST_BIND_TESTS="$*" DIST_BIND_TEST_TIMEOUT="$TIMEOUT" DIST_BIND_CI="${DIST_BIND_CI:-}" \
        DIST_BIND_LAB_CONFIGS=cgroup2 tests/run.sh >"$glog" 2>&1 </dev/null
    rc=$?
    echo $(( (${EPOCHREALTIME/./} - start) / 1000000 )) >"$LOGS/guest-$rel.secs"
    echo $rc >"$LOGS/guest-$rel.rc"
}

# Each entry's result from REL's guest counts here as if the test had run
# here; an entry without one is a skip (77, not under DIST_BIND_CI) or a
# failure.
guest_collect() {
    local rel=$1 glog=$LOGS/guest-$1.log rc want got why t
    shift
    rc=$(cat "$LOGS/guest-$rel.rc" 2>/dev/null || echo 1)
    for t in "$@"; do
        want=$(entry_name "$t")
        got=$(awk -v n="$want" '($1 == "PASS" || $1 == "FAIL" || $1 == "SKIP") && $2 == n { r = $1 } END { print r }' "$glog")
        why=$(grep -m1 'SKIP' "$glog" || echo "no guest here")
        case $got in
            PASS) pass=$((pass + 1)) ;;
            SKIP) skip=$((skip + 1)) ;;
            FAIL) fail=$((fail + 1)); failed+=("$want") ;;
            *)
                if [ "$rc" -eq 77 ] && [ -z "${DIST_BIND_CI:-}" ]; then
                    skip=$((skip + 1))
                    printf 'SKIP %-28s %6ss  %s\n' "$want" 0 "$why"
                elif [ "$rc" -eq 77 ]; then
                    fail=$((fail + 1)); failed+=("$want")
                    printf 'FAIL %-28s %6ss  %s (a skip counts as a failure under DIST_BIND_CI)\n' "$want" 0 "$why"
                else
                    fail=$((fail + 1)); failed+=("$want")
                    printf 'FAIL %-28s %6ss  (no result from the guest, which exited %d; log %s)\n' "$want" 0 "$rc" "${glog#$ROOT/}"
                fi ;;
        esac
    done
    echo "(guest $rel: $(cat "$LOGS/guest-$rel.secs" 2>/dev/null || echo '?') s in all, boot and power-off included)"
}

# The guest's results as they come (with a failed test's details).
guest_results() {
    grep --line-buffered -E '^(PASS|FAIL|SKIP) |^    [!|] |^guest: ' || true
}

# The cgroup2 entries by release, in one boot per release: in the order of
# the other tests (default), or with DIST_BIND_GUEST_BACKGROUND=1 all
# guests one after the other in the background from the start, while the
# other tests run here (qemu is one more process on this machine's cores),
# their results counted at the end.
declare -A guest_batch=()
guest_rels=()
for t in "${selected[@]}"; do
    rel=$(guest_release "$t")
    [ -n "$rel" ] || continue
    [ -n "${guest_batch[$rel]+x}" ] || guest_rels+=("$rel")
    guest_batch[$rel]+="$t "
done
guests_done=" " bg_pid=""
if [ -n "${DIST_BIND_GUEST_BACKGROUND:-}" ] && [ ${#guest_rels[@]} -gt 0 ]; then
    echo "(guests ${guest_rels[*]}: in the background, one boot each; logs build/test-logs/guest-*.log)"
    (for rel in "${guest_rels[@]}"; do guest_boot "$rel" ${guest_batch[$rel]}; done) &
    bg_pid=$!
fi

for t in "${selected[@]}"; do
    rel=$(guest_release "$t")
    if [ -n "$rel" ]; then
        # Every selected cgroup2 entry of this release, in one boot.
        case $guests_done in *" $rel "*) continue ;; esac
        guests_done+="$rel "
        [ -z "$bg_pid" ] || continue
        echo "(guest $rel: one boot for $(wc -w <<<"${guest_batch[$rel]}") cgroup v2 tests; log build/test-logs/guest-$rel.log)"
        : >"$LOGS/guest-$rel.log"
        guest_boot "$rel" ${guest_batch[$rel]} &
        tail -n +1 -f --pid=$! "$LOGS/guest-$rel.log" | guest_results
        wait
        guest_collect "$rel" ${guest_batch[$rel]}
        continue
    fi
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
if [ -n "$bg_pid" ]; then
    echo "(waiting for the guests in the background)"
    wait "$bg_pid"
    for rel in "${guest_rels[@]}"; do
        echo "(guest $rel: $(wc -w <<<"${guest_batch[$rel]}") cgroup v2 tests; log build/test-logs/guest-$rel.log)"
        guest_results <"$LOGS/guest-$rel.log"
        guest_collect "$rel" ${guest_batch[$rel]}
    done
fi
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "check: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] && [ $((pass + skip)) -gt 0 ]

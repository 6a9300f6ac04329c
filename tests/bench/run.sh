#!/usr/bin/env bash
# `make bench`: every tests/bench/b_*.{sh,py}, in name order.  Each prints
# its figures side by side against a baseline measured in the same run
# (absolute times do not compare across runs on these machines), and one
# line per goal:
#     GOAL<TAB>figure<TAB>measured<TAB>goal<TAB>met|missed|within-noise|needs-gpu
# The run ends with one table of every goal, and exits 1 when a goal that
# can be measured without a GPU was missed, or a benchmark failed without
# saying which goal it missed.  "needs-gpu" rows do not count.  A ratio
# goal is "within-noise" when its ratio is over the goal but its 95 %
# interval, after as many triples as benchkit.judge allows, still holds
# the goal: the run could not tell.  Those rows are counted apart and fail
# the run as a missed one does, unless DIST_BIND_BENCH_NOISE_PASSES=1.
set -uo pipefail
cd "$(dirname "$0")/../.."
goals=$(mktemp) out=$(mktemp)
trap 'rm -f "$goals" "$out"' EXIT
rc=0
# DIST_BIND_BENCHES: other benchmarks instead (tests/repo/t_bench_verdicts.py).
for b in ${DIST_BIND_BENCHES:-tests/bench/b_*.sh tests/bench/b_*.py}; do
    [ -f "$b" ] || continue
    name=$(basename "$b")
    echo "== $name"
    case $b in
        *.py) cmd=(/usr/bin/python3 "$b") ;;
        *) cmd=(bash "$b") ;;
    esac
    "${cmd[@]}" 2>&1 | tee "$out"
    status=${PIPESTATUS[0]}
    # Its goal lines go to the table too, each with the benchmark's name.
    awk -F'\t' -v b="${name%.*}" '$1 == "GOAL" {print b "\t" $0}' "$out" >>"$goals"
    if [ "$status" != 0 ] && ! grep -q "^${name%.*}	GOAL	.*	missed\$" "$goals"; then
        # A benchmark that failed must not pass for one without goals.
        printf '%s\tGOAL\t%s ran to the end\texit status %s\texit status 0\tmissed\n' "${name%.*}" "$name" \
            "$status" >>"$goals"
    fi
    echo
done
echo "== goals"
awk -F'\t' 'BEGIN { printf "%-10s %-8s %-60s %-34s %s\n", "bench", "verdict", "figure", "measured", "goal" }
    { v = $6 == "met" ? "met" : $6 == "needs-gpu" ? "needs GPU" : $6 == "within-noise" ? "NOISE" : "MISSED"
      printf "%-10s %-8s %-60s %-34s %s\n", $1, v, $3, $4, $5 }' "$goals"
met=$(awk -F'\t' '$6 == "met"' "$goals" | wc -l)
missed=$(awk -F'\t' '$6 != "met" && $6 != "needs-gpu" && $6 != "within-noise"' "$goals" | wc -l)
noise=$(awk -F'\t' '$6 == "within-noise"' "$goals" | wc -l)
gpu=$(awk -F'\t' '$6 == "needs-gpu"' "$goals" | wc -l)
echo "bench: $met goals met, $missed missed, $noise within this run's noise, $gpu need a GPU"
if [ "$noise" != 0 ]; then
    echo "bench: NOISE: over the goal, but the run's own 95 % interval still holds it after every triple it may take;" \
        "run again to tell (DIST_BIND_BENCH_NOISE_PASSES=1: these do not fail the run)"
    [ "${DIST_BIND_BENCH_NOISE_PASSES:-}" = 1 ] || rc=1
fi
[ "$missed" = 0 ] || rc=1
[ -s "$goals" ] || { echo "bench: no goal was measured"; rc=1; }
exit $rc

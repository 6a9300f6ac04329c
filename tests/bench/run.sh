#!/usr/bin/env bash
# `make bench`: every tests/bench/b_*.{sh,py}, in name order.  Each prints
# its figures side by side against a baseline measured in the same run
# (absolute times do not compare across runs on these machines), and one
# line per goal:
#     GOAL<TAB>figure<TAB>measured<TAB>goal<TAB>met|missed|needs-gpu
# The run ends with one table of every goal, and exits 1 when a goal that
# can be measured without a GPU was missed, or a benchmark failed without
# saying which goal it missed.  "needs-gpu" rows do not count.
set -uo pipefail
cd "$(dirname "$0")/../.."
goals=$(mktemp) out=$(mktemp)
trap 'rm -f "$goals" "$out"' EXIT
rc=0
for b in tests/bench/b_*.sh tests/bench/b_*.py; do
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
    { v = $6 == "met" ? "met" : $6 == "needs-gpu" ? "needs GPU" : "MISSED"
      printf "%-10s %-8s %-60s %-34s %s\n", $1, v, $3, $4, $5 }' "$goals"
met=$(awk -F'\t' '$6 == "met"' "$goals" | wc -l)
missed=$(awk -F'\t' '$6 != "met" && $6 != "needs-gpu"' "$goals" | wc -l)
gpu=$(awk -F'\t' '$6 == "needs-gpu"' "$goals" | wc -l)
echo "bench: $met goals met, $missed missed, $gpu need a GPU"
[ "$missed" = 0 ] || rc=1
[ -s "$goals" ] || { echo "bench: no goal was measured"; rc=1; }
exit $rc

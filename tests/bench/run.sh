#!/usr/bin/env bash
# `make bench`: every tests/bench/b_*.{sh,py}, in name order.  Each prints
# its figures side by side against a baseline measured in the same run
# (absolute times do not compare across runs on these machines).
set -uo pipefail
cd "$(dirname "$0")/../.."
rc=0
for b in tests/bench/b_*.sh tests/bench/b_*.py; do
    [ -f "$b" ] || continue
    echo "== $(basename "$b")"
    case $b in
        *.py) /usr/bin/python3 "$b" || rc=1 ;;
        *) bash "$b" || rc=1 ;;
    esac
    echo
done
exit $rc

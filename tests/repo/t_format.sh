#!/usr/bin/env bash
# The sources follow .clang-format (clang-format 14): `make format-check`,
# and this test of make check.  `tests/repo/t_format.sh --fix` (make format)
# rewrites them in place.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
CF=${CLANG_FORMAT:-clang-format-14}
command -v "$CF" >/dev/null || { echo "FAIL: $CF not found (make deps installs clang-format-14)"; exit 1; }
mapfile -t files < <(git ls-files 'lib/*.c' 'lib/*.cc' 'lib/*.h' 'lib/*.hh' 'spank/*.c' 'spank/*.h' \
    'tools/*.cc' 'tools/*.hh' 'tests/unit/*.c' 'tests/unit/*.cc' 'tests/unit/*.h' 'tests/topology/*.c' \
    'tests/exchange/*.c' 'tests/bench/*.c' 'tests/bench/*.cc' 'tests/fuzz/*.cc' 'tests/fuzz/*.hh' \
    'tests/gpu/*.c' 'tests/gpu/*/*.c' 'tests/gpu/*/*.h' 'tests/lab/kit/helpers/*.c' 2>/dev/null)
[ ${#files[@]} -gt 0 ] || { echo "FAIL: no sources found (not a git checkout?)"; exit 1; }
if [ "${1:-}" = --fix ]; then
    exec "$CF" -i "${files[@]}"
fi
bad=()
for f in "${files[@]}"; do
    "$CF" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
    echo "FAIL: ${#bad[@]} of ${#files[@]} files differ from .clang-format (make format rewrites them):"
    printf '  %s\n' "${bad[@]}"
    "$CF" --dry-run "${bad[0]}" 2>&1 | head -20
    exit 1
fi
echo "ok: ${#files[@]} files follow .clang-format"

#!/usr/bin/env bash
# GPU test: two ranks on one GPU are caught before NCCL, by libdistbind
# (naming both ranks and the host) and by dist-bind-check (flagged, exit 1).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
need_built "$PROBE"
load_gpu_buses
out=$(one_rank env CUDA_VISIBLE_DEVICES=0 "$PROBE")
case $out in
    "ERR DISTBIND_ERR_NO_GPU"* | "ERR DISTBIND_ERR_UNAVAILABLE"*) skip "CUDA has no usable GPU: $out" ;;
esac
host=$(hostname)

# Two ranks of one step, both on GPU 0.
two_ranks() {
    local port; port=$(free_port)
    local dir; dir=$(mktemp -d)
    local secret; secret=$(new_secret)
    for r in 0 1; do
        env -u SLURM_PROCID -u PMIX_NAMESPACE -u PMI_FD RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 NODE_RANK=0 \
            MASTER_ADDR=127.0.0.1 MASTER_PORT=$port DIST_BIND_BOOTSTRAP=tcp DIST_BIND_TIMEOUT=60 \
            DIST_BIND_SECRET="$secret" CUDA_VISIBLE_DEVICES=0 DIST_BIND_DEVICE=0 "$@" >"$dir/$r.out" 2>&1 &
        pids[$r]=$!
    done
    rcs=""
    for r in 0 1; do wait "${pids[$r]}"; rcs+="$? "; done
    out0=$(cat "$dir/0.out") out1=$(cat "$dir/1.out")
    rm -rf "$dir"
}

two_ranks "$PROBE"
for o in "$out0" "$out1"; do
    [[ $o == "ERR DISTBIND_ERR_DEVICE"*"ranks 0 and 1 would both use GPU"*" on $host "* ]] \
        && ok "libdistbind: $o" || bad "libdistbind did not name both ranks and $host: $o"
done

if [ ! -x "$CHECK" ]; then
    echo "dist-bind-check not built (no hwloc): its part skipped"
    done_
fi
two_ranks "$CHECK"
[[ $rcs == "1 1 " ]] && ok "dist-bind-check fails on every rank ($rcs)" || bad "dist-bind-check exit codes: $rcs"
grep -q "PROBLEM: ranks 0 and 1 would both use GPU" <<<"$out0" && ok "dist-bind-check names the duplicate" \
    || bad "dist-bind-check output: $out0"
grep -Eq "^0 .*DUPLICATE" <<<"$out0" && grep -Eq "^1 .*DUPLICATE" <<<"$out0" && ok "both rows flagged" || bad "rows: $out0"
done_

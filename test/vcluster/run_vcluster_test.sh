#!/usr/bin/env bash
# The vcluster suite's driver: runs a program across a virtual cluster
# (tools/vcluster.sh) and checks the outcome. Skips (exit 77) when the
# machine cannot build one (not root, no namespaces, ...).
#
# Usage: run_vcluster_test.sh VCLUSTER MODE ARGS...
#   mpi LAYOUT VC_CHECK      the MPI-only checks of vc_check.c (hostnames, MPI's
#                            nodes, MPI_Allreduce, same-host traffic off the links,
#                            cross-host traffic on them), and the tool's --link-stats
#   lanes TEST_BINARY        a Chorus test case at 2x2 with UCX's debug log: every
#                            UCX endpoint between hosts uses tcp over eth0 only,
#                            every one inside a host shared memory (sysv/posix/cma;
#                            with CHORUS_SHM_RENDEZVOUS=0, so that UCX carries the
#                            larger messages inside a host too)
#   bytes CHORUS_BENCH       Chorus all-reduce of 16 MiB at 2x2: at least 16 MiB per
#                            call crossed each host's link each way
#   hosts LAYOUT CHORUS_BENCH  a Chorus all-reduce on that layout with CHORUS_LOG=info:
#                            rank 0 reports the host map ("4 ranks on 3 hosts (2+1+1)")
#                            and one-sided steps through UCX RMA
#   run PROGRAM ARGS...      PROGRAM at 2x2; its exit status
#   observe LAYOUT MODE OBSERVE SOURCE_ROOT
#                            test/run_observe.sh's MODE (hang, disagree) with the
#                            ranks spread over the hosts of LAYOUT: the hang
#                            report crosses hosts (its launcher is this cluster)
#   forced LAYOUT ALGOS PROGRAM ARGS...
#                            PROGRAM on that layout with CHORUS_ALGO=ALGOS and
#                            CHORUS_LOG=info: its exit status, and rank 0 reports
#                            that each forced algorithm ran ("allreduce:
#                            two_level_rails (CHORUS_ALGO)")
#   chosen LAYOUT SETTINGS CHOICES PROGRAM ARGS...
#                            PROGRAM on that layout with SETTINGS (NAME=VALUE ...,
#                            each passed with -x) and CHORUS_LOG=info: its exit
#                            status, and rank 0 reports that the cost model chose
#                            each irregular form of CHOICES (coll=algo,...) for
#                            any size
set -euo pipefail
vcluster=$1 mode=$2
shift 2

if [[ $(id -u) != 0 ]]; then
  echo "SKIP: the virtual cluster needs root (network namespaces, veth links, mounts)"
  exit 77
fi
if ! why=$("$vcluster" --check 2>&1); then
  echo "SKIP: $why"
  exit 77
fi

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
start=$(date +%s.%N)
took() { printf '%s: %.1f s\n' "$1" "$(echo "$(date +%s.%N) - $start" | bc)"; }

# Runs PROGRAM ARGS on LAYOUT with MPIRUN_ARGS into $dir/log; on failure
# prints the log without Chorus's info lines and exits 1, naming WHAT.
run_logged() {  # LAYOUT MPIRUN_ARGS WHAT PROGRAM ARGS...
  local layout=$1 margs=$2 what=$3
  shift 3
  "$vcluster" -q --layout "$layout" --mpirun-args "$margs" -- "$@" >"$dir/log" 2>&1 || {
    grep -v "^\[chorus info" "$dir/log" | tail -60
    echo "FAIL: $(basename "$1") failed on $layout with $what"
    exit 1
  }
  grep -v "^\[chorus info" "$dir/log" | tail -3
}

case $mode in
  mpi)
    layout=$1 prog=$2 bytes=32M
    "$vcluster" --layout "$layout" --link-stats "$dir/links" -- "$prog" --layout "$layout" --bytes "$bytes"
    # the links seen from outside the job: every host sent and received at
    # least its ranks' cross-host messages
    IFS=, read -r -a ranks <<<"$layout"
    h=0
    while read -r host sent received; do
      need=$((ranks[h] * 32 * 1024 * 1024))
      echo "link of $host: sent $sent, received $received bytes (at least $need expected)"
      ((sent >= need && received >= need)) || {
        echo "FAIL: too few bytes on the link of $host"
        exit 1
      }
      h=$((h + 1))
    done <"$dir/links"
    ((h == ${#ranks[@]})) || {
      echo "FAIL: --link-stats listed $h hosts, expected ${#ranks[@]}"
      exit 1
    }
    took "layout $layout"
    ;;

  lanes)
    prog=$1
    UCX_LOG_LEVEL=debug CHORUS_SHM_RENDEZVOUS=0 "$vcluster" -q 2 2 -- "$prog" --use-colour no \
      "allreduce matches MPI_Allreduce where MPI is exact" >"$dir/log" 2>&1 || {
      tail -50 "$dir/log"
      echo "FAIL: the Chorus test failed across hosts"
      exit 1
    }
    # One endpoint configuration per "ep 0x..: am_lane ..." line of a process,
    # then one "ep 0x..: lane[i]: N:TL/DEV.." line per lane (the lines of
    # different ranks may interleave).
    awk '
      function key() {
        match($0, /\[vc-h[0-9]+:[ 0-9]+:[0-9]+\]/); p = substr($0, RSTART, RLENGTH)
        match($0, / ep 0x[0-9a-f]+:/); return p substr($0, RSTART, RLENGTH)
      }
      / ep 0x[0-9a-f]+: am_lane / { blk[key()] = ++n; next }
      / ep 0x[0-9a-f]+: lane\[[0-9]+\]: / {
        k = key(); if (!(k in blk)) blk[k] = ++n
        for (i = 1; i <= NF; i++) if ($i ~ /^lane\[[0-9]+\]:$/) { split($(i + 1), a, ":"); print blk[k], a[2]; break }
      }' "$dir/log" | sort -u >"$dir/lanes"
    awk '
      { tl = $2; sub(/\/.*/, "", tl)
        if (tl == "tcp") { tcp[$1] = 1; if ($2 !~ /^tcp\/eth0/) badif[$1] = $2 }
        else if (tl ~ /^(sysv|posix|cma|xpmem|knem)$/) shm[$1] = 1
        eps[$1] = 1 }
      END {
        for (e in eps) { if (e in tcp && e in shm) mixed++; else if (e in tcp) nt++; else if (e in shm) ns++; else other++ }
        for (e in badif) { print "FAIL: a tcp lane not on eth0: " badif[e]; bad++ }
        printf "UCX endpoints: %d over tcp (between hosts), %d over shared memory (inside a host), %d mixed, %d other\n", nt, ns, mixed, other
        # Endpoints are made on first use, so how many depends on the
        # algorithms; every one is either tcp (to the other host) or shared
        # memory (inside a host), and both kinds occur at 2 hosts x 2 ranks.
        if (mixed || other || bad || ns == 0 || nt == 0) { print "FAIL: expected tcp and shared-memory endpoints, nothing mixed or else"; exit 1 }
      }' "$dir/lanes" || {
      grep -E "lane\[" "$dir/log" | head -40
      exit 1
    }
    took "lanes"
    ;;

  bytes)
    bench=$1 iters=4
    "$vcluster" -q --link-stats "$dir/links" 2 2 -- "$bench" allreduce -m 16M:16M -i "$iters" -x 1 --no-mpi -c
    # whatever the algorithm, each host's result needs the other host's 16 MiB
    need=$((iters * 16 * 1024 * 1024))
    while read -r host sent received; do
      echo "link of $host: sent $sent, received $received bytes (at least $need expected)"
      ((sent >= need && received >= need)) || {
        echo "FAIL: Chorus's all-reduce did not cross the link of $host"
        exit 1
      }
    done <"$dir/links"
    took "bytes"
    ;;

  hosts)
    layout=$1 bench=$2
    IFS=, read -r -a ranks <<<"$layout"
    total=0
    for n in "${ranks[@]}"; do total=$((total + n)); done
    # and that the one-sided steps go through UCX RMA between the hosts
    want="$total ranks on ${#ranks[@]} hosts (${layout//,/+}); one-sided steps: through registration keys (UCX RMA)"
    "$vcluster" -q --layout "$layout" --mpirun-args "-x CHORUS_LOG=info" -- \
      "$bench" allreduce -m 4:64K -i 3 -x 1 --no-mpi -c >"$dir/log" 2>&1 || {
      tail -30 "$dir/log"
      echo "FAIL: the all-reduce failed on $layout"
      exit 1
    }
    grep -F "[chorus info rank 0] $want" "$dir/log" || {
      grep -F "[chorus info" "$dir/log" | head
      echo "FAIL: rank 0 did not report '$want'"
      exit 1
    }
    took "host map $layout"
    ;;

  run)
    "$vcluster" -q 2 2 -- "$@"
    took "$(basename "$1") at 2x2"
    ;;
  observe)
    layout=$1 what=$2 prog=$3 src=$4
    # run_observe.sh calls "MPIRUN -np N [-x NAME=VALUE]... PROGRAM MODE":
    # the launcher below takes the layout's ranks instead of N, and hands
    # the variables to the ranks through the cluster's inherited environment.
    cat >"$dir/launch" <<EOS
#!/usr/bin/env bash
vars=()
while [ \$# -gt 0 ]; do
  case \$1 in
    -np) shift 2 ;;
    -x) vars+=("\$2"); shift 2 ;;
    *) break ;;
  esac
done
env "\${vars[@]}" CHORUS_LOG=info "$vcluster" -q --layout "$layout" -- "\$@" 2>&1 | tee "$dir/observe.log"
exit \${PIPESTATUS[0]}
EOS
    chmod +x "$dir/launch"
    TEST_MPI_ENV_FLAG=-x "$src/test/run_observe.sh" "$dir/launch" "$prog" "$what" "$src"
    IFS=, read -r -a ranks <<<"$layout"
    grep -q "ranks on ${#ranks[@]} hosts" "$dir/observe.log" || {
      echo "FAIL: the ranks were not on ${#ranks[@]} hosts"
      exit 1
    }
    took "observe $what on $layout"
    ;;

  forced)
    layout=$1 algos=$2
    shift 2
    run_logged "$layout" "-x CHORUS_ALGO=$algos -x CHORUS_LOG=info" "CHORUS_ALGO=$algos" "$@"
    IFS=, read -r -a items <<<"$algos"
    for item in "${items[@]}"; do
      want="[chorus info rank 0] ${item%%=*}: ${item#*=} (CHORUS_ALGO)"
      grep -qF "$want" "$dir/log" || {
        grep -F "CHORUS_ALGO" "$dir/log" | sort -u | head || true
        echo "FAIL: rank 0 did not report '$want'"
        exit 1
      }
      echo "ran: ${item#*=} for ${item%%=*}"
    done
    took "$(basename "$1") on $layout, $algos"
    ;;

  chosen)
    layout=$1 settings=$2 choices=$3
    shift 3
    margs="-x CHORUS_LOG=info"
    for setting in $settings; do margs+=" -x $setting"; done
    run_logged "$layout" "$margs" "$settings" "$@"
    IFS=, read -r -a items <<<"$choices"
    for item in "${items[@]}"; do
      want="[chorus info rank 0] ${item%%=*} on "
      grep -F "$want" "$dir/log" | grep -qF " ranks, any size: ${item#*=} (" || {
        grep -F "any size" "$dir/log" | sort -u | head || true
        echo "FAIL: rank 0 did not report choosing ${item#*=} for ${item%%=*}"
        exit 1
      }
      echo "chosen: ${item#*=} for ${item%%=*}"
    done
    took "$(basename "$1") on $layout, $settings"
    ;;

  *)
    echo "unknown mode $mode" >&2
    exit 2
    ;;
esac

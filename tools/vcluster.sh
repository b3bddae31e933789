#!/usr/bin/env bash
# A virtual cluster on one machine: runs one mpirun job across HOSTS "hosts",
# each a set of Linux namespaces (network, UTS, IPC, PID, mount) joined to a
# bridge by a veth link, so that ranks on different hosts talk over TCP and
# ranks on one host over shared memory, as on a real cluster.
#
# Usage:
#   tools/vcluster.sh [options] HOSTS RANKS_PER_HOST -- COMMAND [ARGS...]
#   tools/vcluster.sh [options] --layout 2,1,1 -- COMMAND [ARGS...]
#   tools/vcluster.sh --check      # can this machine build one? (exit 0 if so)
#   tools/vcluster.sh --cleanup    # remove what crashed runs left behind
# Options:
#   --layout N,N,...    ranks per host, one number per host (instead of HOSTS RANKS_PER_HOST)
#   --rate RATE         limit each host's link to RATE in each direction (tc tbf; e.g. 10gbit, 500mbit)
#   --subnet A.B.C      the hosts' /24 (default 10.213.77, or the next free 10.213.x)
#   --mpirun-args ARGS  extra mpirun arguments, split at blanks (also $VCLUSTER_MPIRUN_ARGS)
#   --link-stats FILE   after COMMAND, write "HOST SENT_BYTES RECEIVED_BYTES" per host link
#   -q, --quiet         no summary line
#   -h, --help
# The exit status is mpirun's; 125 when the cluster could not be built
# (not root, a tool or a kernel feature missing: the message says which).
#
# What it builds, per run (NAME = vcluster-<pid>-<random>):
#   netns NAME-sw   the switch: bridge br0 (A.B.C.1, "vc-head"); mpirun runs here
#   netns NAME-hI   host I: eth0 (A.B.C.(10+I)) whose peer is port hI on br0,
#                   hostname vc-hI, its own IPC and PID namespace, and a mount
#                   namespace with private /dev/shm, /proc, /sys, /etc/hosts,
#                   boot id and a tmpfs for Open MPI's session directory
# Nothing is attached to the root network namespace. mpirun starts one orted
# per host through this script as its rsh agent (nsenter into the host).
set -euo pipefail

readonly PREFIX=vcluster
readonly RUN_ROOT=/run/vcluster
SELF=$(readlink -f "${BASH_SOURCE[0]}")
readonly SELF

say() { echo "vcluster: $*" >&2; }
die() {
  say "$*"
  exit 125
}

# ---------------------------------------------------------------------------
# rsh agent: mpirun runs "agent HOST orted ARGS..."; run the command in HOST.
if [[ ${1-} == --agent ]]; then
  run_dir=$2 host=$3
  shift 3
  [[ $host =~ ^vc-h[0-9]+$ && -r $run_dir/hosts/$host ]] || {
    echo "vcluster agent: unknown host '$host'" >&2
    exit 1
  }
  pid=$(<"$run_dir/hosts/$host")
  exec nsenter --target "$pid" --net --uts --ipc --pid --mount --wd="$PWD" -- /bin/sh -c "$*"
fi

# ---------------------------------------------------------------------------
# Host init: PID 1 of a host's PID namespace, inside its other namespaces.
# Sets the host up, then waits until the run's lifeline closes (the owner
# exited or crashed); its exit ends every process of the host.
if [[ ${1-} == --holder ]]; then
  run_dir=$2 name=$3 idx=$4
  if command -v hostname >/dev/null; then hostname "$name"; else echo "$name" >/proc/sys/kernel/hostname; fi
  mount -t tmpfs -o mode=1777 vcluster-shm /dev/shm
  mount -t tmpfs -o mode=1777 vcluster-tmp "$run_dir/tmp"
  mount -t sysfs vcluster-sys /sys 2>/dev/null || true # /sys/class/net of this host
  mount --bind "$run_dir/etc-hosts" /etc/hosts
  mount --bind "$run_dir/boot_id.$idx" /proc/sys/kernel/random/boot_id
  exec 3<"$run_dir/lifeline"
  : >"$run_dir/ready.$idx"
  # bash reaps the orphans it adopts as PID 1 while it waits here
  while read -r -u 3 _; do :; done
  exit 0
fi

# ---------------------------------------------------------------------------
usage() {
  sed -n '2,/^set -euo/p' "$SELF" | sed '$d; s/^# \{0,1\}//'
  exit "${1:-0}"
}

# start time of a process (field 22 of /proc/PID/stat), to tell a live owner
# from a recycled pid
start_time() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  # shellcheck disable=SC2086
  set -- $stat
  echo "${20}"
}

owner_alive() { # RUN_DIR
  local pid st
  read -r pid st <"$1/owner" 2>/dev/null || return 1
  [[ $(start_time "$pid" 2>/dev/null) == "$st" ]]
}

kill_netns_pids() { # NETNS: SIGKILL every process in it, by pid
  local ns=$1 pids
  pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ') || return 0
  # shellcheck disable=SC2086
  [[ -z ${pids// /} ]] || kill -KILL $pids 2>/dev/null || true
}

remove_run() { # RUN_ID: every namespace and file of one run
  local id=$1 ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${id}-(sw|h[0-9]+)\$" || true); do
    kill_netns_pids "$ns"
  done
  sleep 0.2
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${id}-(sw|h[0-9]+)\$" || true); do
    kill_netns_pids "$ns"
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "${RUN_ROOT:?}/$id"
}

# Runs whose owner is gone: their run directory, or namespaces without one.
stale_runs() {
  local d id
  for d in "$RUN_ROOT"/"$PREFIX"-*; do
    [[ -d $d ]] || continue
    owner_alive "$d" || basename "$d"
  done
  for id in $(ip netns list 2>/dev/null | awk '{print $1}' | sed -nE "s/^(${PREFIX}-[0-9]+-[0-9a-f]+)-(sw|h[0-9]+)\$/\1/p" | sort -u); do
    [[ -d $RUN_ROOT/$id ]] || echo "$id"
  done
}

cleanup_stale() { # VERBOSE
  local id n=0
  for id in $(stale_runs | sort -u); do
    remove_run "$id"
    n=$((n + 1))
    [[ $1 == 0 ]] || say "removed leftovers of run $id"
  done
  [[ $1 == 0 || $n -gt 0 ]] || say "nothing to clean up"
}

need_root_and_tools() { # NEED_TC
  local missing=() c
  [[ $(id -u) == 0 ]] || die "must run as root (network namespaces, veth links and mounts need CAP_SYS_ADMIN and CAP_NET_ADMIN); try: sudo $0 ..."
  for c in ip unshare nsenter setsid mount mpirun; do
    command -v "$c" >/dev/null || missing+=("$c")
  done
  [[ $1 == 0 ]] || command -v tc >/dev/null || missing+=(tc)
  ((${#missing[@]} == 0)) || die "missing tools: ${missing[*]} (ip, tc: iproute2; unshare, nsenter, setsid, mount: util-linux; mpirun: openmpi-bin)"
  local t
  for t in net uts ipc pid mnt; do
    [[ -e /proc/self/ns/$t ]] || die "kernel lacks $t namespaces (/proc/self/ns/$t is missing)"
  done
}

# Probe every kernel feature in a throwaway namespace.
check_kernel() { # NEED_TBF
  local ns="$PREFIX-check-$$" err
  err=$(ip netns add "$ns" 2>&1) || die "cannot create a network namespace: $err"
  # shellcheck disable=SC2064
  trap "ip netns del $ns 2>/dev/null || true" EXIT
  err=$(ip -n "$ns" link add br0 type bridge 2>&1) || die "kernel lacks bridge support (CONFIG_BRIDGE; modprobe bridge): $err"
  err=$(ip -n "$ns" link add vc0 type veth peer name vc1 2>&1) || die "kernel lacks veth support (CONFIG_VETH; modprobe veth): $err"
  ip -n "$ns" link set vc0 up && ip -n "$ns" link set vc1 up
  if [[ $1 != 0 ]]; then
    err=$(tc -n "$ns" qdisc add dev vc0 root tbf rate 1gbit burst 128kb latency 50ms 2>&1) ||
      die "kernel lacks the tbf qdisc (CONFIG_NET_SCH_TBF; modprobe sch_tbf): $err"
  fi
  err=$(nsenter --net="/run/netns/$ns" unshare --uts --ipc --pid --mount --fork --mount-proc --propagation private \
    /bin/sh -c 'hostname vc-probe 2>/dev/null || echo vc-probe >/proc/sys/kernel/hostname; mount -t tmpfs none /dev/shm' 2>&1) ||
    die "cannot create UTS/IPC/PID/mount namespaces or mount tmpfs in them (unshare): $err"
  ip netns del "$ns"
  trap - EXIT
}

# --- subnet: a /24 that nothing in the root namespace uses -----------------
ip2int() {
  local IFS=. a b c d
  read -r a b c d <<<"$1"
  echo $(((a << 24) | (b << 16) | (c << 8) | d))
}
subnet_clash() { # A.B.C: prints what overlaps A.B.C.0/24 in the root namespace
  local net p len base mask ours
  ours=$(ip2int "$1.0")
  while read -r p; do
    [[ $p == */* ]] || p="$p/32"
    net=${p%/*} len=${p#*/}
    ((len > 0)) || continue # the default route overlaps everything
    ((len < 24)) || len=24
    mask=$(((0xffffffff << (32 - len)) & 0xffffffff))
    base=$(ip2int "$net")
    if (((base & mask) == (ours & mask))); then
      echo "$p"
      return 0
    fi
  done < <({
    ip -4 -o addr show | awk '{print $4}'
    ip -4 route show table all 2>/dev/null | awk '$1 != "default" && $1 != "broadcast" && $1 != "local" && $1 != "unreachable" {print $1}'
  })
  return 1
}

# --- rates -----------------------------------------------------------------
rate_bytes_per_s() { # tc rate -> bytes/s, or fails
  local r=${1,,}
  [[ $r =~ ^([0-9]+(\.[0-9]+)?)([kmgt]?)(bit|bps)$ ]] || return 1
  awk -v n="${BASH_REMATCH[1]}" -v p="${BASH_REMATCH[3]}" -v u="${BASH_REMATCH[4]}" 'BEGIN {
    m = 1; if (p == "k") m = 1e3; if (p == "m") m = 1e6; if (p == "g") m = 1e9; if (p == "t") m = 1e12
    b = n * m; if (u == "bit") b /= 8; printf "%d\n", b }'
}

# ---------------------------------------------------------------------------
main() {
  local layout="" rate="" subnet="" quiet=0 link_stats="" mode=run
  local extra="${VCLUSTER_MPIRUN_ARGS-}"
  local -a pos=()
  local h
  while (($#)); do
    case $1 in
      --) shift && break ;;
      --layout) layout=${2?--layout needs a value} && shift 2 ;;
      --layout=*) layout=${1#*=} && shift ;;
      --rate) rate=${2?--rate needs a value} && shift 2 ;;
      --rate=*) rate=${1#*=} && shift ;;
      --subnet) subnet=${2?--subnet needs a value} && shift 2 ;;
      --subnet=*) subnet=${1#*=} && shift ;;
      --mpirun-args) extra="$extra ${2?--mpirun-args needs a value}" && shift 2 ;;
      --mpirun-args=*) extra="$extra ${1#*=}" && shift ;;
      --link-stats) link_stats=${2?--link-stats needs a file} && shift 2 ;;
      --link-stats=*) link_stats=${1#*=} && shift ;;
      -q | --quiet) quiet=1 && shift ;;
      --cleanup) mode=cleanup && shift ;;
      --check) mode=check && shift ;;
      -h | --help) usage 0 ;;
      -*) say "unknown option $1" && usage 125 >&2 ;;
      *) pos+=("$1") && shift ;;
    esac
  done

  if [[ $mode == cleanup ]]; then
    need_root_and_tools 0
    cleanup_stale 1
    rmdir "$RUN_ROOT" 2>/dev/null || true
    exit 0
  fi
  if [[ $mode == check ]]; then
    need_root_and_tools 1
    check_kernel 1
    say "ok: root, ip, tc, unshare, nsenter, mpirun, and network/UTS/IPC/PID/mount namespaces, veth, bridge and tbf work"
    exit 0
  fi

  # --- what to build
  local -a ranks=()
  if [[ -n $layout ]]; then
    ((${#pos[@]} == 0)) || die "give either --layout or HOSTS RANKS_PER_HOST, not both"
    [[ $layout =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "bad --layout '$layout' (ranks per host, e.g. 2,1,1)"
    IFS=, read -r -a ranks <<<"$layout"
  else
    ((${#pos[@]} == 2)) || die "usage: $0 [options] HOSTS RANKS_PER_HOST -- COMMAND [ARGS...] (or --help)"
    [[ ${pos[0]} =~ ^[1-9][0-9]*$ && ${pos[1]} =~ ^[1-9][0-9]*$ ]] || die "HOSTS and RANKS_PER_HOST must be positive numbers"
    for ((h = 0; h < pos[0]; h++)); do ranks+=("${pos[1]}"); done
  fi
  local nhosts=${#ranks[@]} total=0 r
  ((nhosts <= 200)) || die "at most 200 hosts"
  for r in "${ranks[@]}"; do total=$((total + r)); done
  (($# > 0)) || die "no COMMAND given (after --)"
  local -a cmd=("$@")

  local rate_bps=0
  if [[ -n $rate ]]; then
    rate_bps=$(rate_bytes_per_s "$rate") || die "bad --rate '$rate' (a number with kbit, mbit, gbit, bit, or kbps.. for bytes/s, as tc takes)"
  fi

  need_root_and_tools "$((rate_bps > 0))"
  mkdir -p "$RUN_ROOT"
  cleanup_stale 0

  # --- subnet
  local clash c
  if [[ -n $subnet ]]; then
    [[ $subnet =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]] || die "bad --subnet '$subnet' (the first three numbers of a /24, e.g. 10.213.77)"
    if clash=$(subnet_clash "$subnet"); then die "--subnet $subnet.0/24 overlaps $clash on this machine"; fi
  else
    for c in 77 $(seq 78 254) $(seq 1 76); do
      if ! clash=$(subnet_clash "10.213.$c"); then
        subnet="10.213.$c"
        break
      fi
    done
    [[ -n $subnet ]] || die "every 10.213.x.0/24 overlaps an address or route here: give --subnet"
  fi

  # --- the run's names and directory
  local id
  id="$PREFIX-$$-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
  RUN_ID=$id
  RUN_DIR=$RUN_ROOT/$id
  HOST_PIDS=()
  HOLDER_PIDS=()
  MPIRUN_PID=""
  trap teardown EXIT
  trap 'on_signal INT 130' INT
  trap 'on_signal TERM 143' TERM
  trap 'on_signal HUP 129' HUP
  # a failed setup step is the cluster's failure (125), not the command's
  set -o errtrace
  trap 'die "setup failed (status $?): $BASH_COMMAND"' ERR
  # The directory appears with its owner inside, so a parallel run's clean-up
  # never takes it for a leftover (and a parallel teardown may remove an
  # empty $RUN_ROOT meanwhile: retry).
  local try
  for try in 1 2 3; do
    mkdir -p "$RUN_ROOT/.new-$id"/{hosts,tmp,log} &&
      echo "$$ $(start_time $$)" >"$RUN_ROOT/.new-$id/owner" &&
      mv "$RUN_ROOT/.new-$id" "$RUN_DIR" 2>/dev/null && break
    ((try < 3)) || die "cannot create $RUN_DIR"
  done
  mkfifo "$RUN_DIR/lifeline"
  exec {LIFELINE}<>"$RUN_DIR/lifeline"

  {
    printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n'
    printf '%s.1 vc-head\n' "$subnet"
    for ((h = 0; h < nhosts; h++)); do printf '%s.%d vc-h%d\n' "$subnet" $((10 + h)) "$h"; done
  } >"$RUN_DIR/etc-hosts"
  for ((h = 0; h < nhosts; h++)); do printf 'vc-h%d slots=%d\n' "$h" "${ranks[h]}"; done >"$RUN_DIR/hostfile"
  printf '#!/bin/sh\nexec %q --agent %q "$@"\n' "$SELF" "$RUN_DIR" >"$RUN_DIR/agent"
  chmod +x "$RUN_DIR/agent"

  # --- the switch
  local sw="$id-sw" err burst=0
  err=$(ip netns add "$sw" 2>&1) || die "cannot create a network namespace: $err"
  ip -n "$sw" link set lo up
  err=$(ip -n "$sw" link add br0 type bridge 2>&1) || die "kernel lacks bridge support (CONFIG_BRIDGE; modprobe bridge): $err"
  ip -n "$sw" addr add "$subnet.1/24" dev br0
  ip -n "$sw" link set br0 up
  if ((rate_bps > 0)); then
    burst=$((rate_bps / 1000)) # 1 ms at the rate, at least 128 KiB (a GSO packet and then some)
    ((burst >= 131072)) || burst=131072
  fi

  # --- the hosts
  local ns
  for ((h = 0; h < nhosts; h++)); do
    ns="$id-h$h"
    err=$(ip netns add "$ns" 2>&1) || die "cannot create a network namespace: $err"
    err=$(ip -n "$sw" link add "h$h" type veth peer name eth0 netns "$ns" 2>&1) ||
      die "kernel lacks veth support (CONFIG_VETH; modprobe veth): $err"
    ip -n "$sw" link set "h$h" master br0 up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$subnet.$((10 + h))/24" dev eth0
    ip -n "$ns" link set eth0 up
    if ((rate_bps > 0)); then
      err=$(tc -n "$ns" qdisc add dev eth0 root tbf rate "$rate" burst "$burst" latency 50ms 2>&1) ||
        die "cannot limit the link (tc tbf; CONFIG_NET_SCH_TBF, modprobe sch_tbf): $err"
      tc -n "$sw" qdisc add dev "h$h" root tbf rate "$rate" burst "$burst" latency 50ms
    fi
    # A per-host boot id: UCX's shared-memory transports treat processes with
    # the same boot id (and IPC/PID namespace) as on one machine.
    printf '%08x-%s\n' "$h" "$(cut -c10- /proc/sys/kernel/random/boot_id)" >"$RUN_DIR/boot_id.$h"
    setsid nsenter --net="/run/netns/$ns" \
      unshare --uts --ipc --pid --mount --fork --mount-proc --propagation private --kill-child \
      bash "$SELF" --holder "$RUN_DIR" "vc-h$h" "$h" </dev/null >"$RUN_DIR/log/vc-h$h" 2>&1 {LIFELINE}>&- &
    HOLDER_PIDS+=("$!")
  done
  # wait for every host to be set up, then note its PID 1 (as seen from here)
  local t u kids
  for ((h = 0; h < nhosts; h++)); do
    for ((t = 0; t < 100; t++)); do
      [[ -e $RUN_DIR/ready.$h ]] && break
      kill -0 "${HOLDER_PIDS[h]}" 2>/dev/null || die "host vc-h$h failed to start: $(tr '\n' ' ' <"$RUN_DIR/log/vc-h$h")"
      sleep 0.05
    done
    [[ -e $RUN_DIR/ready.$h ]] || die "host vc-h$h did not start in 5 s: $(tr '\n' ' ' <"$RUN_DIR/log/vc-h$h")"
    u=${HOLDER_PIDS[h]}
    kids=$(cat "/proc/$u/task/$u/children" 2>/dev/null || ps -o pid= --ppid "$u")
    kids=${kids// /}
    [[ -n $kids ]] || die "host vc-h$h has no init process"
    HOST_PIDS+=("$kids")
    echo "$kids" >"$RUN_DIR/hosts/vc-h$h"
  done

  # --- the job
  local -a margs=(
    --hostfile "$RUN_DIR/hostfile" -np "$total"
    --mca plm_rsh_agent "$RUN_DIR/agent"
    --mca plm_rsh_no_tree_spawn 1 # every orted is started from the head
    --mca oob_tcp_if_include "$subnet.0/24"
    --mca btl_tcp_if_include "$subnet.0/24"
    --mca orte_tmpdir_base "$RUN_DIR/tmp"
  )
  local -a xargs_=()
  read -r -a xargs_ <<<"$extra"
  [[ " ${xargs_[*]-} " == *" --bind-to "* || " ${xargs_[*]-} " == *" -bind-to "* ]] || margs+=(--bind-to none)
  # The hosts share this machine's cores. When the job's ranks outnumber
  # them, waiting ranks must yield: Open MPI's idle loop, and Chorus's (which
  # spins long when its host's ranks fit the machine's cores, as each virtual
  # host's do); CHORUS_SPIN set by the caller (even to auto) is kept.
  if ((total > $(nproc))); then
    margs+=(--mca mpi_yield_when_idle 1)
    [[ -n ${CHORUS_SPIN+set} ]] || export CHORUS_SPIN=64
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TMPDIR="$RUN_DIR/tmp"

  if ((quiet == 0)); then
    local desc=""
    for ((h = 0; h < nhosts; h++)); do desc+=" vc-h$h:${ranks[h]}"; done
    say "$nhosts hosts (ranks:$desc) on $subnet.0/24${rate:+, links limited to $rate}; run $id"
  fi
  trap - ERR
  set +e
  # shellcheck disable=SC2016 # $0 and $@ are the inner shell's
  nsenter --net="/run/netns/$sw" unshare --uts --mount --propagation private -- \
    /bin/sh -c 'hostname vc-head 2>/dev/null || echo vc-head >/proc/sys/kernel/hostname; mount --bind "$0" /etc/hosts && exec "$@"' \
    "$RUN_DIR/etc-hosts" mpirun "${margs[@]}" "${xargs_[@]}" "${cmd[@]}" <&0 {LIFELINE}>&- &
  MPIRUN_PID=$!
  wait "$MPIRUN_PID"
  local rc=$?
  MPIRUN_PID=""
  set -e

  if [[ -n $link_stats ]]; then
    for ((h = 0; h < nhosts; h++)); do
      nsenter --net="/run/netns/$id-h$h" cat /proc/net/dev |
        awk -v h="vc-h$h" '{ sub(/^ */, "") } $1 == "eth0:" { print h, $10, $2 }'
    done >"$link_stats"
  fi
  exit "$rc"
}

# shellcheck disable=SC2317 # run from traps
on_signal() { # NAME STATUS
  trap '' INT TERM HUP
  say "got SIG$1: stopping the job and tearing the cluster down"
  if [[ -n ${MPIRUN_PID-} ]]; then
    kill -TERM "$MPIRUN_PID" 2>/dev/null || true
    local t
    for ((t = 0; t < 50; t++)); do
      kill -0 "$MPIRUN_PID" 2>/dev/null || break
      sleep 0.1
    done
  fi
  exit "$2"
}

# shellcheck disable=SC2317 # run from the EXIT trap
teardown() {
  local rc=$? p h
  trap '' INT TERM HUP
  set +e
  [[ -n ${RUN_ID-} ]] || exit "$rc"
  [[ -z ${MPIRUN_PID-} ]] || kill -KILL "$MPIRUN_PID" 2>/dev/null
  [[ -z ${LIFELINE-} ]] || exec {LIFELINE}>&-
  # the end of a host's PID 1 ends every process of that host
  for p in "${HOST_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  for p in "${HOLDER_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  for p in "${HOLDER_PIDS[@]}" ${MPIRUN_PID:+"$MPIRUN_PID"}; do wait "$p" 2>/dev/null; done
  remove_run "$RUN_ID"
  rmdir "$RUN_ROOT" 2>/dev/null
  for h in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${RUN_ID}-" || true); do
    say "could not remove network namespace $h (see: ip netns pids $h)"
  done
  exit "$rc"
}

main "$@"

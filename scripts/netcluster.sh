#!/usr/bin/env bash
# An emulated cluster on one machine: network namespaces joined by shaped veth links.
#
#   scripts/netcluster.sh [--name C] up N --rate R [--ppn K] [--burst B] [--queue Q] [--no-measure]
#   scripts/netcluster.sh [--name C] down
#   scripts/netcluster.sh [--name C] status
#   scripts/netcluster.sh [--name C] measure          # each link's bandwidth and latency
#   scripts/netcluster.sh [--name C] run [--ppn K] [--mpi mpich|openmpi] [--preload LIB]
#                                        [--timeout S] [--env VAR=VALUE]... -- PROG ARGS
#   scripts/netcluster.sh [--name C] with N --rate R [--ppn K] [--burst B] [--queue Q] -- COMMAND ARGS
#                        # up (no measurement), run COMMAND, down whatever happens
#
# Cluster C (default "nc", or $PCOLL_NET_NAME) consists of
#   pcoll-C-sw           a namespace holding the bridge br0 (the switch);
#   pcoll-C-n0 .. n<N-1> one namespace per node: lo, and pcnet = one end of a veth pair whose
#                        other end (n<k>) is a port of br0; address 10.213.0.<k+1>/24
#                        ($PCOLL_NET_SUBNET, first three octets) on pcnet;
# shaping at rate R (burst B, default 32kb) on both ends of every veth pair, so both
# directions of each node's link are shaped. --queue acks (default): htb at rate R whose
# TCP acknowledgements (packets under 128 bytes) go ahead of the data (a node sending and receiving at once
# otherwise queues the acknowledgements of what it receives behind what it sends, and its
# incoming stream stalls: docs/emulated-cluster.md); --queue fifo: one tbf queue of 200 ms
# (the cluster before session 19). Nothing is created outside these namespaces:
# no address or route in the root namespace; `down` removes exactly pcoll-C-*.
#
# run: N*K ranks, ranks k*K .. k*K+K-1 on node k (K = --ppn, default the one given to up).
# Each rank is exec'd by this script's `_rank` step inside its node's namespace with a UTS
# namespace of its own (hostname C-node<k>), UCX_TLS=tcp,self and UCX_NET_DEVICES=pcnet
# (MPICH's ch4:ucx otherwise moves bytes through shared memory), PCOLL_NODES=hostname (pcoll's
# nodes are the namespaces, unless --env sets PCOLL_NODES), and LD_PRELOAD=LIB only
# for PROG itself (--preload). MPICH (hydra) is the default launcher; see
# docs/emulated-cluster.md for Open MPI.
#
# Exit codes: 77 = cannot be done here (not root, namespaces cannot be created, tools
# missing), so that tests can skip; 2 = usage; otherwise the command's status.
set -uo pipefail

SELF=$(readlink -f "$0")
ROOT=$(cd "$(dirname "$SELF")/.." && pwd)
NAME=${PCOLL_NET_NAME:-nc}
SUBNET=${PCOLL_NET_SUBNET:-10.213.0}
IFACE=pcnet
STATE_ROOT=/run/pcoll-netcluster

die() { echo "netcluster: $*" >&2; exit 1; }
cannot() { echo "netcluster: cannot run here: $*" >&2; exit 77; }
usage() { sed -n '2,14p' "$SELF" | sed 's/^# \{0,1\}//' >&2; exit 2; }

while [ $# -gt 0 ]; do
  case $1 in
    --name) NAME=$2; shift 2 ;;
    --name=*) NAME=${1#*=}; shift ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || usage
CMD=$1; shift
case $NAME in *[!A-Za-z0-9]*|'') die "--name: letters and digits only ($NAME)" ;; esac
[ ${#NAME} -le 8 ] || die "--name: at most 8 characters ($NAME)"
PFX=pcoll-$NAME-
SW=${PFX}sw
STATE=$STATE_ROOT/$NAME
node_ns() { echo "${PFX}n$1"; }
node_ip() { echo "$SUBNET.$(( $1 + 1 ))"; }

# --- rates -------------------------------------------------------------------------------
# bits per second of a tc rate ("500mbit", "1gbit", "100kbit", "2000000")
rate_bps() {
  local r=${1,,} n u
  n=${r%%[a-z]*}; u=${r#"$n"}
  case $n in ''|*[!0-9.]*) return 1 ;; esac
  case $u in
    ''|bit) awk -v n="$n" 'BEGIN{printf "%.0f", n}' ;;
    kbit) awk -v n="$n" 'BEGIN{printf "%.0f", n*1e3}' ;;
    mbit) awk -v n="$n" 'BEGIN{printf "%.0f", n*1e6}' ;;
    gbit) awk -v n="$n" 'BEGIN{printf "%.0f", n*1e9}' ;;
    *) return 1 ;;
  esac
}

# --- preconditions -----------------------------------------------------------------------
need_root() {
  [ "$(id -u)" = 0 ] || cannot "needs root to create network namespaces (running as $(id -un))"
  local t
  for t in ip tc unshare timeout python3; do
    command -v $t >/dev/null 2>&1 || cannot "'$t' not found"
  done
}

existing_ns() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PFX}(sw|n[0-9]+)\$" | sort -V || true; }

# Kill what still runs inside our namespaces (ranks of an interrupted run), by pid.
kill_ns_pids() {
  local ns pids
  for ns in $(existing_ns); do
    pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null
  done
  return 0
}

teardown() {
  local ns
  kill_ns_pids
  for ns in $(existing_ns); do ip netns del "$ns" 2>/dev/null; done
  rm -rf "$STATE"
}

load_state() {
  [ -f "$STATE/env" ] || die "cluster '$NAME' is not up (scripts/netcluster.sh up N --rate R)"
  # shellcheck disable=SC1090,SC1091
  . "$STATE/env"
  [ -n "$(existing_ns)" ] || die "cluster '$NAME': state file but no namespaces; run down"
}

# --- up ----------------------------------------------------------------------------------
# shape NS DEV RATE BURST QUEUE: DEV's egress at RATE. fifo: one tbf queue (200 ms deep).
# acks: htb at RATE (ceil RATE) with two classes that borrow from each other: TCP packets
# under 128 bytes (acknowledgements, and small control messages such as UCX's rendezvous
# handshakes) in the first (priority 0), everything else in the second (its pfifo queue is
# the veth's txqueuelen, 1000 packets). Pure acknowledgements alone: a chain of 4 MiB in
# 256 KiB segments over 4 nodes took 100-104 ms; with the small packets too 87-89 (one
# stream 70; fifo 119-144).
shape() {
  local ns=$1 dev=$2 rate=$3 burst=$4 queue=$5 bps
  if [ "$queue" = fifo ]; then
    kern tc -n "$ns" qdisc add dev "$dev" root tbf rate "$rate" burst "$burst" latency 200ms
    return
  fi
  bps=$(rate_bps "$rate")
  kern tc -n "$ns" qdisc add dev "$dev" root handle 1: htb default 20
  kern tc -n "$ns" class add dev "$dev" parent 1: classid 1:1 htb rate "${bps}bit" ceil "${bps}bit" \
    burst "$burst" cburst "$burst" quantum 60000
  kern tc -n "$ns" class add dev "$dev" parent 1:1 classid 1:10 htb rate "$((bps / 10))bit" \
    ceil "${bps}bit" burst "$burst" cburst "$burst" prio 0 quantum 60000
  kern tc -n "$ns" class add dev "$dev" parent 1:1 classid 1:20 htb rate "$((bps - bps / 10))bit" \
    ceil "${bps}bit" burst "$burst" cburst "$burst" prio 1 quantum 60000
  kern tc -n "$ns" filter add dev "$dev" parent 1: protocol ip prio 1 u32 \
    match ip protocol 6 0xff match u16 0x0000 0xff80 at 2 flowid 1:10
}

cmd_up() {
  local n="" rate="" ppn=1 burst=32kb measure=1 queue=acks
  while [ $# -gt 0 ]; do
    case $1 in
      --rate) rate=$2; shift 2 ;;
      --ppn) ppn=$2; shift 2 ;;
      --burst) burst=$2; shift 2 ;;
      --queue) queue=$2; shift 2 ;;
      --no-measure) measure=0; shift ;;
      [0-9]*) n=$1; shift ;;
      *) usage ;;
    esac
  done
  [ -n "$n" ] && [ -n "$rate" ] || usage
  [ "$n" -ge 1 ] && [ "$n" -le 64 ] || die "N must be 1..64"
  [ "$ppn" -ge 1 ] 2>/dev/null || die "--ppn must be >= 1"
  rate_bps "$rate" >/dev/null || die "--rate: not a tc rate ($rate; e.g. 500mbit, 1gbit)"
  [[ $burst =~ ^[0-9]+([kKmM]?(b|bit)?)$ ]] || die "--burst: a tc size (e.g. 32kb, 64k, 16000)"
  [[ $queue =~ ^(acks|fifo)$ ]] || die "--queue: acks or fifo"
  need_root
  [ -z "$(existing_ns)" ] && [ ! -e "$STATE" ] || die "cluster '$NAME' exists already (scripts/netcluster.sh --name $NAME down)"

  # Anything half made is removed on failure and on Ctrl-C (the exit status is kept).
  trap 'rc=$?; echo "netcluster: up failed or interrupted; removing cluster $NAME" >&2; teardown; exit $rc' EXIT
  trap 'exit 130' INT TERM HUP

  local err
  if ! err=$(ip netns add "$SW" 2>&1); then
    cannot "'ip netns add' failed: $err"
  fi
  # The kernel features the cluster needs (bridge, veth, tbf): their absence is "cannot
  # here" (77) too, with the kernel's word for it.
  kern() { local e; e=$("$@" 2>&1) || cannot "'$*' failed: $e"; }
  ip -n "$SW" link set lo up || exit 1
  kern ip -n "$SW" link add br0 type bridge
  ip -n "$SW" link set br0 up || exit 1
  local k ns
  for ((k = 0; k < n; k++)); do
    ns=$(node_ns $k)
    ip netns add "$ns" || exit 1
    ip -n "$ns" link set lo up || exit 1
    kern ip -n "$ns" link add $IFACE type veth peer name n$k netns "$SW"
    ip -n "$SW" link set n$k master br0 || exit 1
    ip -n "$ns" addr add "$(node_ip $k)/24" dev $IFACE || exit 1
    ip -n "$ns" link set $IFACE up || exit 1
    ip -n "$SW" link set n$k up || exit 1
    # both directions: node -> switch on pcnet, switch -> node on n<k>
    shape "$ns" $IFACE "$rate" "$burst" $queue
    shape "$SW" n$k "$rate" "$burst" $queue
  done
  mkdir -p "$STATE"
  cat >"$STATE/env" <<EOF
N=$n
PPN=$ppn
RATE=$rate
BURST=$burst
QUEUE=$queue
SUBNET=$SUBNET
CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
EOF
  # wait until every veth is up (carrier) before measuring or running
  local tries=0
  while ip -n "$(node_ns $((n - 1)))" -br link show $IFACE | grep -q 'LOWERLAYERDOWN\|DOWN' && [ $tries -lt 50 ]; do
    sleep 0.1; tries=$((tries + 1))
  done
  trap - EXIT INT TERM HUP
  echo "netcluster: $NAME up: $n nodes x $ppn ranks, $rate, burst $burst, queue $queue, $SUBNET.1..$SUBNET.$n on $IFACE"
  if [ $measure = 1 ] && [ "$n" -ge 2 ]; then
    cmd_measure || { echo "netcluster: measurement failed (cluster left up)" >&2; return 1; }
  fi
  return 0
}

# --- measure -----------------------------------------------------------------------------
# For each pair node k -> node k+1 (a ring: every node's outgoing and incoming shaped
# direction once): TCP round trips of 1 byte (latency = half the median round trip) and a
# bulk transfer bounded in bytes (rate x 0.25 s, 1..64 MB) and time (10 s).
PY_SERVER='
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 5211)); s.listen(1); s.settimeout(10)
print("ready", flush=True)
c, _ = s.accept(); c.settimeout(10); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
f = c.makefile("rb")
nrt, nbytes = [int(x) for x in f.readline().split()]
for _ in range(nrt):
    f.read(1); c.sendall(b"x")
left = nbytes
while left > 0:
    b = f.read(min(left, 1 << 20))
    if not b: break
    left -= len(b)
c.sendall(b"d"); c.close()
'
PY_CLIENT='
import socket, sys, time
addr, nrt, nbytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
c = socket.create_connection((addr, 5211), timeout=10)
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
c.sendall(b"%d %d\n" % (nrt, nbytes))
rts = []
for _ in range(nrt):
    t = time.perf_counter(); c.sendall(b"x"); c.recv(1); rts.append(time.perf_counter() - t)
rts.sort()
buf = b"\0" * (1 << 20); left = nbytes
t = time.perf_counter()
while left > 0:
    n = min(left, len(buf)); c.sendall(buf[:n]); left -= n
c.recv(1)
dt = time.perf_counter() - t
print("%.1f %.6f" % (rts[len(rts) // 2] / 2 * 1e6, nbytes * 8 / dt / 1e6))
'
cmd_measure() {
  need_root
  load_state
  [ "$N" -ge 2 ] || { echo "netcluster: one node, no link to measure"; return 0; }
  local bps bytes k j a b out lat mbps rc=0 sumr=0
  bps=$(rate_bps "$RATE")
  bytes=$(awk -v b="$bps" 'BEGIN{x=b/8*0.25; if(x<1e6)x=1e6; if(x>64e6)x=64e6; printf "%.0f", x}')
  echo "netcluster: link check, node k -> node k+1: latency (half TCP round trip, 1 byte, median of 200) and bandwidth ($bytes bytes) against $RATE"
  printf '  %-18s %10s %12s %10s\n' link latency_us Mbit/s "of rate"
  for ((k = 0; k < N; k++)); do
    j=$(( (k + 1) % N ))
    a=$(node_ns $k); b=$(node_ns $j)
    exec 3< <(timeout 20 ip netns exec "$b" python3 -c "$PY_SERVER" "$(node_ip $j)" 2>&1)
    read -r -t 10 line <&3 || true
    out=$(timeout 20 ip netns exec "$a" python3 -c "$PY_CLIENT" "$(node_ip $j)" 200 "$bytes" 2>&1)
    exec 3<&-
    wait 2>/dev/null
    read -r lat mbps <<<"$out"
    if [[ $mbps =~ ^[0-9.]+$ ]]; then
      printf '  %-18s %10s %12.0f %9.0f%%\n' "node$k -> node$j" "$lat" "$mbps" \
        "$(awk -v m="$mbps" -v b="$bps" 'BEGIN{print m*1e6/b*100}')"
    else
      printf '  %-18s FAILED: %s\n' "node$k -> node$j" "$(echo "$out" | tail -1)"
      rc=1
    fi
  done
  return $rc
}

# --- status / down -----------------------------------------------------------------------
cmd_status() {
  need_root
  local nss
  nss=$(existing_ns)
  if [ -z "$nss" ]; then echo "netcluster: $NAME is down"; return 0; fi
  [ -f "$STATE/env" ] && { . "$STATE/env"; echo "netcluster: $NAME up since $CREATED: $N nodes x $PPN ranks, $RATE, burst $BURST, queue ${QUEUE:-fifo}"; }
  local ns
  for ns in $nss; do
    case $ns in
      *-sw) echo "  $ns: bridge br0, ports $(ip -n "$ns" -br link show master br0 2>/dev/null | awk '{sub(/@.*/,"",$1); printf "%s ", $1}')" ;;
      *) echo "  $ns: $(ip -n "$ns" -br addr show $IFACE 2>/dev/null | awk '{print $3}')" \
           "tx $(ip -n "$ns" -s link show $IFACE | awk '/TX:/{getline; print $1}') B" \
           "rx $(ip -n "$ns" -s link show $IFACE | awk '/RX:/{getline; print $1}') B;" \
           "$(tc -n "$ns" qdisc show dev $IFACE | head -1 | sed 's/ *$//')" ;;
    esac
  done
}

cmd_down() {
  need_root
  local had
  had=$(existing_ns | wc -l)
  teardown
  echo "netcluster: $NAME down ($had namespaces removed)"
}

# --- run ---------------------------------------------------------------------------------
# Per-rank step, exec'd by the launcher in the root namespace: enter the rank's node.
cmd_rank() {
  [ "${1:-}" = -- ] && shift
  local rank=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-}}
  [ -n "$rank" ] || die "_rank: no PMI_RANK / OMPI_COMM_WORLD_RANK (run it through 'run')"
  local node=$(( rank / PCOLL_NET_PPN ))
  export UCX_TLS=${PCOLL_NET_UCX_TLS:-tcp,self} UCX_NET_DEVICES=$IFACE
  # A node is a namespace (its own host name): MPI_COMM_TYPE_SHARED would put every rank on
  # one node, though the MPI moves their bytes over TCP (UCX_TLS above).
  export PCOLL_NODES=${PCOLL_NODES:-hostname}
  if [ -n "${OMPI_COMM_WORLD_RANK:-}" ]; then
    # Open MPI: its launcher serves PMIx on the root namespace's loopback; relay it into the
    # node's namespace (scripts/netcluster/pmix_relay.py).
    local uri=${PMIX_SERVER_URI41:-${PMIX_SERVER_URI4:-${PMIX_SERVER_URI3:-${PMIX_SERVER_URI2:-}}}}
    local port=${uri##*:}
    case $uri in *tcp4://127.0.0.1:*) ;; *) die "_rank: unexpected PMIX_SERVER_URI: $uri" ;; esac
    python3 "$ROOT/scripts/netcluster/pmix_relay.py" "$(node_ns $node)" "$port" "${PCOLL_NET_TIMEOUT:-600}" ||
      die "_rank: PMIx relay failed"
  fi
  exec ip netns exec "$(node_ns $node)" unshare --uts sh -c \
    'hostname "$0" && { [ -z "$PCOLL_NET_PRELOAD" ] || export LD_PRELOAD="$PCOLL_NET_PRELOAD"; } && exec "$@"' \
    "$NAME-node$node" "$@"
}

# MPICH 4.0.2 + UCX 1.13 over TCP hang in MPI_Finalize unless UCX keeps progressing there,
# and MPICH's busy-polling ranks (more of them than cores) make every message wait for a
# scheduler tick: scripts/netcluster/ucx_finalize_progress.c fixes both (the second: an idle
# rank sleeps on UCX's event fd; PCOLL_NET_SPIN=0 turns that off). Built on first use into
# build/net/ (needs UCX's headers, libucx-dev).
finalize_fix() {
  local src=$ROOT/scripts/netcluster/ucx_finalize_progress.c so=$ROOT/build/net/ucx_finalize_progress.so
  if [ ! -f "$so" ] || [ "$src" -nt "$so" ]; then
    mkdir -p "$ROOT/build/net"
    cc -shared -fPIC -O2 -Wall -pthread -o "$so.tmp" "$src" -ldl >&2 && mv "$so.tmp" "$so" ||
      die "cannot build $so"
  fi
  echo "$so"
}

cmd_run() {
  local ppn="" mpi=mpich preload="" tmo=600 envs=() fix=1
  while [ $# -gt 0 ]; do
    case $1 in
      --no-finalize-fix) fix=0; shift ;;
      --ppn) ppn=$2; shift 2 ;;
      --mpi) mpi=$2; shift 2 ;;
      --preload) preload=$(readlink -f "$2"); shift 2 ;;
      --timeout) tmo=$2; shift 2 ;;
      --env) envs+=("$2"); shift 2 ;;
      --) shift; break ;;
      *) usage ;;
    esac
  done
  [ $# -ge 1 ] || usage
  need_root
  load_state
  [ -n "$ppn" ] && PPN=$ppn
  local np=$((N * PPN)) rc
  [ -z "$preload" ] || [ -f "$preload" ] || die "--preload: no such file: $preload"
  if [ $mpi = mpich ] && [ $fix = 1 ]; then
    local so
    so=$(finalize_fix) || exit 1
    preload="$so${preload:+ $preload}"
  fi
  export PCOLL_NET_PPN=$PPN PCOLL_NET_PRELOAD=$preload PCOLL_NET_NAME=$NAME
  local kv
  for kv in "${envs[@]}"; do export "${kv?}"; done
  # The launcher runs in the background so that a signal to this script (Ctrl-C, a test's
  # timeout) is handled at once: the launcher is stopped, ranks left in our namespaces are
  # killed by pid.
  LAUNCHER=""
  trap 'on_signal' INT TERM HUP
  case $mpi in
    mpich)
      command -v mpiexec.mpich >/dev/null || cannot "mpiexec.mpich not found"
      timeout -k 10 "$tmo" mpiexec.mpich -n $np "$SELF" --name "$NAME" _rank -- "$@" </dev/null &
      ;;
    openmpi)
      command -v mpirun.openmpi >/dev/null || cannot "mpirun.openmpi not found"
      run_openmpi "$tmo" $np "$@" </dev/null &
      ;;
    *) die "--mpi: mpich or openmpi" ;;
  esac
  LAUNCHER=$!
  wait $LAUNCHER
  rc=$?
  LAUNCHER=""
  kill_ns_pids
  trap - INT TERM HUP
  [ $rc = 124 ] && echo "netcluster: run timed out after $tmo s" >&2
  return $rc
}

on_signal() {
  echo "netcluster: interrupted; stopping the launcher and the ranks" >&2
  if [ -n "${LAUNCHER:-}" ]; then
    kill -TERM "$LAUNCHER" 2>/dev/null
    local i
    for i in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$LAUNCHER" 2>/dev/null || break; sleep 0.2; done
  fi
  kill_ns_pids
  exit 130
}

# Open MPI: ob1 over the TCP BTL restricted to the cluster's subnet (no shared memory BTL, no
# UCX), ranks entered into their nodes by _rank with a PMIx relay.
run_openmpi() {
  local tmo=$1 np=$2; shift 2
  export PCOLL_NET_TIMEOUT=$tmo
  timeout -k 10 "$tmo" mpirun.openmpi --allow-run-as-root --oversubscribe -np "$np" \
    --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include "$SUBNET.0/24" \
    --mca osc pt2pt --mca coll ^hcoll \
    "$SELF" --name "$NAME" _rank -- "$@"
}

# --- with --------------------------------------------------------------------------------
cmd_with() {
  local upargs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do upargs+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift
  [ $# -ge 1 ] || usage
  need_root
  trap 'teardown' EXIT
  trap 'exit 130' INT TERM HUP
  cmd_up "${upargs[@]}" --no-measure || exit $?
  trap 'teardown' EXIT          # cmd_up cleared it on success
  trap 'exit 130' INT TERM HUP
  "$@"
}

case $CMD in
  up) cmd_up "$@" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  measure) cmd_measure ;;
  run) cmd_run "$@" ;;
  with) cmd_with "$@" ;;
  _rank) cmd_rank "$@" ;;
  -h|--help|help) usage ;;
  *) usage ;;
esac

#!/usr/bin/env bash
# A single-node SLURM cluster on this machine, for tests/cluster/test_slurm.py.
#
#   tests/cluster/slurm.sh install     apt-get the Debian packages (slurmctld slurmd slurm-client munge)
#   tests/cluster/slurm.sh up          install if needed, start what is not running; prints
#                                      "started: <daemons>" (the ones this call started)
#   tests/cluster/slurm.sh down [D..]  stop the named daemons (default: every daemon this script
#                                      started, as recorded in $DIR/started); nothing else
#   tests/cluster/slurm.sh status      sinfo
#
# State lives in $HEADATLAS_SLURM_DIR (default /tmp/headatlas-slurm): its own munge key, socket
# and daemon, SLURM state, spool and logs; the daemons listen on ports 16817/16818
# (HEADATLAS_SLURM_PORT: the controller's; slurmd takes the next one). The one file outside it is
# /etc/slurm/slurm.conf (+ gres.conf), where `srun` inside a job looks (the executor plugin's
# job step drops SLURM_CONF from the environment of its srun): it is written only when absent
# or written by this script before, and `down` removes it once the controller is stopped; a
# slurm.conf of a real installation is never replaced (the script then says it cannot run).
# /etc/munge and the system's munged are not touched.
#
# The cluster: this host as controller and compute node, partitions `cpu` (default) and `gpu`
# (the node carries two generic `gpu` GRES backed by /dev/null and /dev/zero, so `--gres=gpu:1` schedules as
# in the real profile; there is no CUDA and extraction runs on the CPU), no accounting
# (AccountingStorageType=accounting_storage/none), ProctrackType=proctrack/linuxproc,
# TaskPlugin=task/none, SelectType=select/cons_tres. The node declares max(8, real) CPUs
# (SlurmdParameters=config_overrides) so the profile's 8-CPU extraction jobs fit on a small
# machine; nothing enforces CPU or memory limits here.
#
# Exit status 3 (with "cannot: <reason>" on stdout) means this machine cannot run the cluster
# (not root, no apt-get, the Debian mirror unreachable, a foreign slurm.conf): the test skips.
set -euo pipefail

DIR="${HEADATLAS_SLURM_DIR:-/tmp/headatlas-slurm}"
PORT="${HEADATLAS_SLURM_PORT:-16817}"
CONF=/etc/slurm/slurm.conf
GRES=/etc/slurm/gres.conf
MARK="# Written by headatlas tests/cluster/slurm.sh"
SOCKET="$DIR/munge/munge.socket.2"
HOST="$(hostname -s)"
PACKAGES=(slurmctld slurmd slurm-client munge)

cannot() { echo "cannot: $*"; exit 3; }
log() { echo "slurm.sh: $*" >&2; }

have_binaries() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null &&
        command -v sbatch >/dev/null && command -v munged >/dev/null
}

install() {
    have_binaries && return 0
    [ "$(id -u)" = 0 ] || cannot "SLURM is not installed and installing it needs root (apt-get install ${PACKAGES[*]})"
    command -v apt-get >/dev/null || cannot "SLURM is not installed and there is no apt-get to install it"
    log "installing ${PACKAGES[*]} with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >"/tmp/headatlas-slurm-apt.log" 2>&1; then
        apt-get update -qq >>"/tmp/headatlas-slurm-apt.log" 2>&1 ||
            cannot "apt-get update failed (no network to the Debian mirror?), see /tmp/headatlas-slurm-apt.log"
        apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >>"/tmp/headatlas-slurm-apt.log" 2>&1 ||
            cannot "apt-get install ${PACKAGES[*]} failed, see /tmp/headatlas-slurm-apt.log"
    fi
    have_binaries || cannot "apt-get ran but slurmctld/slurmd/sbatch/munged are still missing"
}

pid_of() {  # the live pid recorded in a daemon's pid file, or nothing
    local file="$DIR/run/$1.pid" pid
    [ -s "$file" ] || return 0
    pid="$(cat "$file")"
    if kill -0 "$pid" 2>/dev/null && grep -q "$1" "/proc/$pid/comm" 2>/dev/null; then echo "$pid"; fi
}

write_conf() {
    local cpus mem
    cpus="$(nproc)"; [ "$cpus" -ge 8 ] || cpus=8
    mem="$(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo)"
    if [ -e "$CONF" ] && ! head -1 "$CONF" | grep -qF "$MARK"; then
        cannot "$CONF exists and was not written by this script (a real SLURM installation?)"
    fi
    mkdir -p /etc/slurm
    cat >"$CONF.new" <<EOF
$MARK: a single-node test cluster, state in $DIR.
ClusterName=headatlas
SlurmctldHost=$HOST
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SOCKET
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
MinJobAge=3600
SchedulerParameters=bf_interval=5
GresTypes=gpu
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmdSpoolDir=$DIR/spool
StateSaveLocation=$DIR/state
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
NodeName=$HOST CPUs=$cpus RealMemory=$mem Gres=gpu:2 State=UNKNOWN
PartitionName=cpu Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$HOST MaxTime=INFINITE State=UP
EOF
    printf "%s\nNodeName=%s Name=gpu File=/dev/null,/dev/zero\n" "$MARK" "$HOST" >"$GRES.new"
    local changed=0
    cmp -s "$CONF.new" "$CONF" || changed=1
    cmp -s "$GRES.new" "$GRES" || changed=1
    mv "$CONF.new" "$CONF"
    mv "$GRES.new" "$GRES"
    return $changed
}

record() { grep -qx "$1" "$DIR/started" 2>/dev/null || echo "$1" >>"$DIR/started"; }

wait_for() {  # wait_for <seconds> <command...>
    local deadline=$((SECONDS + $1)); shift
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 1
    done
}

node_state() { sinfo -h -n "$HOST" -o %t 2>/dev/null | head -1; }

node_ready() {  # idle/mixed/allocated and responding; a node drained by an earlier run is resumed
    case "$(node_state)" in
        idle | mix | alloc) return 0 ;;
        drain | drng | down | inval) scontrol update nodename="$HOST" state=resume >/dev/null 2>&1 ;;
    esac
    return 1
}

up() {
    if [ "$(id -u)" != 0 ]; then  # without root: use this script's cluster if it runs already
        if have_binaries && head -1 "$CONF" 2>/dev/null | grep -qF "$MARK" && node_ready; then
            echo "started: "
            return 0
        fi
        cannot "starting a SLURM cluster needs root (tests/cluster/slurm.sh up as root starts one)"
    fi
    install
    mkdir -p "$DIR"/{run,spool,state,log,munge}
    chmod 0755 "$DIR" "$DIR/munge"  # clients (any user) reach the munge socket; the key stays 0400
    local started=()
    if ! write_conf; then  # a changed configuration: restart what this script runs
        for daemon in slurmd slurmctld; do stop "$daemon"; done
    fi
    if [ -z "$(pid_of munged)" ]; then
        [ -s "$DIR/munge/munge.key" ] || { dd if=/dev/urandom bs=1 count=1024 of="$DIR/munge/munge.key" status=none; chmod 0400 "$DIR/munge/munge.key"; }
        munged --force --socket="$SOCKET" --key-file="$DIR/munge/munge.key" \
            --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" \
            --seed-file="$DIR/munge/munged.seed"
        record munged; started+=(munged)
        wait_for 10 test -S "$SOCKET" || { log "munged did not start: $DIR/log/munged.log"; exit 1; }
    fi
    if [ -z "$(pid_of slurmctld)" ]; then
        slurmctld -c -f "$CONF"  # -c: a clean start, no jobs or node states of an earlier run
        record slurmctld; started+=(slurmctld)
    fi
    wait_for 30 scontrol ping || { log "slurmctld does not answer: $DIR/log/slurmctld.log"; tail -20 "$DIR/log/slurmctld.log" >&2; exit 1; }
    if [ -z "$(pid_of slurmd)" ]; then
        slurmd -f "$CONF"
        record slurmd; started+=(slurmd)
    fi
    wait_for 60 node_ready || {
        log "node $HOST is not ready: $(sinfo -h -n "$HOST" -o '%t %E')"
        tail -20 "$DIR/log/slurmd.log" >&2
        exit 1
    }
    echo "started: ${started[*]:-}"
}

stop() {  # stop one daemon this script started (its pid file, its name), wait until it is gone
    local pid
    pid="$(pid_of "$1")"
    [ -n "$pid" ] || return 0
    kill "$pid"
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -0 "$pid" 2>/dev/null && { log "$1 ($pid) did not stop"; return 1; }
    [ -f "$DIR/started" ] && sed -i "/^$1\$/d" "$DIR/started"
    return 0
}

down() {
    local daemons=("$@")
    if [ ${#daemons[@]} -eq 0 ] && [ -f "$DIR/started" ]; then mapfile -t daemons <"$DIR/started"; fi
    for daemon in slurmd slurmctld munged; do  # dependents first
        for wanted in "${daemons[@]}"; do
            if [ "$wanted" = "$daemon" ] && grep -qx "$daemon" "$DIR/started" 2>/dev/null; then
                stop "$daemon"
            fi
        done
    done
    # With no controller left, drop the configuration `up` wrote: a slurm.conf naming a controller
    # that is down makes every `scontrol` wait ~9 s, and the executor plugin runs one at each
    # Snakemake start, local runs included. `up` writes it again.
    if [ -z "$(pid_of slurmctld)" ]; then
        for file in "$CONF" "$GRES"; do
            if head -1 "$file" 2>/dev/null | grep -qF "$MARK"; then rm -f "$file"; fi
        done
    fi
}

case "${1:-}" in
    install) install ;;
    up) up ;;
    down) shift; down "$@" ;;
    status) sinfo ;;
    *) echo "usage: $0 install|up|down [daemon...]|status" >&2; exit 2 ;;
esac

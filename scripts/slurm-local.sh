#!/usr/bin/env bash
# Start, stop or inspect a real single-node SLURM cluster on this machine (for development and CI).
#
#   bash scripts/slurm-local.sh start    # install (Debian packages, if missing), configure, start; idempotent
#   bash scripts/slurm-local.sh stop     # stop the daemons this script started (by their pid files)
#   bash scripts/slurm-local.sh status   # exit 0 when the node answers idle/mixed/allocated, else 1
#
# Needs root (apt-get, daemons). Recipe and traps: docs/cluster.md ("A local cluster"). The cluster has one
# partition, `debug`, no GPUs (GresTypes unset) and no slurmdbd: the profile's status command is squeue,
# which needs MinJobAge >= 3 x the plugin's first status-check delay (MinJobAge=300 below).
set -euo pipefail

CONF=/etc/slurm/slurm.conf
MARK="# written by hsaudit scripts/slurm-local.sh"
HOST=$(hostname -s)

log() { echo "slurm-local: $*" >&2; }

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    log "must run as root (apt-get and the SLURM daemons need it)"
    exit 1
  fi
}

node_up() {
  command -v sinfo >/dev/null 2>&1 || return 1
  timeout 5 sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated|completing)'
}

install_packages() {
  if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sinfo >/dev/null \
    && command -v munged >/dev/null; then
    return
  fi
  log "installing munge and slurm from the Debian packages"
  # Keep the packages' maintainer scripts from starting services (there is no init system here).
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends munge slurmctld slurmd slurm-client >/dev/null
}

write_config() {
  # Never overwrite a slurm.conf that someone else wrote (a real site's).
  if [ -f "$CONF" ] && ! grep -qF "$MARK" "$CONF"; then
    log "$CONF exists and was not written by this script; using it as it is"
    return
  fi
  local cpus mem
  cpus=$(nproc)
  # 80% of physical memory, in MB, leaves room for the daemons and Snakemake itself.
  mem=$(awk '/MemTotal/ {printf "%d", $2 / 1024 * 0.8}' /proc/meminfo)
  install -d -m 0755 /etc/slurm /var/log/slurm
  install -d -o slurm -g slurm -m 0755 /var/lib/slurm /var/lib/slurm/slurmctld /var/lib/slurm/slurmd
  chown slurm:slurm /var/log/slurm
  local tmp="$CONF.tmp$$"
  cat >"$tmp" <<EOF
$MARK
ClusterName=localcluster
SlurmctldHost=$HOST
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
# Finished jobs stay visible to squeue for 5 minutes: the profile's squeue status checks rely on it.
MinJobAge=300
KillWait=5
Waittime=0
NodeName=$HOST CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$tmp" "$CONF"
}

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start() {
  need_root
  if node_up; then
    log "already running ($(sinfo -h -o '%P %T %c CPUs %m MB' | head -1))"
    return 0
  fi
  install_packages
  write_config
  install -d -o munge -g munge -m 0755 /run/munge
  if ! pid_alive /run/munge/munged.pid; then
    runuser -u munge -- /usr/sbin/munged --force
  fi
  pid_alive /run/slurmctld.pid || /usr/sbin/slurmctld
  pid_alive /run/slurmd.pid || /usr/sbin/slurmd
  local i
  for i in $(seq 1 120); do
    if node_up; then
      log "up: $(sinfo -h -o '%P %T %c CPUs %m MB' | head -1)"
      return 0
    fi
    # A node left DOWN/DRAIN by an earlier unclean stop is put back in service.
    if [ $((i % 10)) -eq 0 ]; then
      scontrol update nodename="$HOST" state=resume >/dev/null 2>&1 || true
    fi
    sleep 0.5
  done
  log "the node did not become idle within 60 s; see /var/log/slurm/slurmctld.log and slurmd.log"
  sinfo >&2 || true
  return 1
}

stop() {
  need_root
  local f
  for f in /run/slurmd.pid /run/slurmctld.pid /run/munge/munged.pid; do
    if pid_alive "$f"; then
      kill "$(cat "$f")" || true
    fi
  done
  for f in /run/slurmd.pid /run/slurmctld.pid; do
    local i
    for i in $(seq 1 20); do pid_alive "$f" || break; sleep 0.25; done
  done
  rm -f /run/slurmd.pid /run/slurmctld.pid
  log "stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) node_up ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac

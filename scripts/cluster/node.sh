#!/usr/bin/env bash
# haloforge cluster node helper: the one program `haloforge cluster` runs on a node.
#
# haloforge sends this file over SSH on stdin and runs it with fixed, quoted arguments:
#   ssh -o BatchMode=yes -o StrictHostKeyChecking=yes DEST -- bash -s -- COMMAND ARGS...
# Every argument is checked again here (names, hosts, ports, paths), so nothing a peer or a
# log says can turn into a command. What haloforge starts lives in one directory of the
# node's state dir, ${XDG_STATE_HOME:-~/.local/state}/haloforge/cluster: NAME.pid ("PID
# STARTTIME"; the process is the leader of its own session), NAME.log, NAME.cmd, NAME.exit.
#
# Commands (output is KEY=VALUE lines unless said otherwise; values have no control bytes):
#   probe [--clock] [--pins PATH] [--image REF] [--self HOST] [--rccl] [--tcp HOST:PORT]...
#                          facts for `haloforge cluster check`
#   start NAME [--env K=V]... [--unset K]... -- CMD ARGS...
#                          CMD detached in its own session, its output in NAME.log
#   stop NAME...|--all     TERM the session, KILL after a grace, and check nothing is left
#   status                 one line per service haloforge started here
#   follow NAME SECONDS    NAME.log as it grows ("| " before each line) until NAME exits
#   log NAME LINES         the last lines of NAME.log ("| " before each line)
#   http HOST PORT PATH    an HTTP GET; the raw response (at most 1 MiB)
#   tcp HOST PORT SECONDS  can this node open HOST:PORT? open, refused, timeout, unreachable
#   run SECONDS -- CMD ARGS...
#                          CMD in the foreground with a time limit (ray status, ray stop)
# Exit codes: 0 done, 1 the command failed, 2 bad arguments.

set -Eeuo pipefail
export LC_ALL=C

HF_DIR=${XDG_STATE_HOME:-$HOME/.local/state}/haloforge/cluster
HF_STOP_GRACE=${HF_STOP_GRACE:-10}
# Engines haloforge starts, and where distributions put them when not on PATH: Debian's
# llama.cpp-tools-extra ships /usr/libexec/<triplet>/llama/bin/ggml-rpc-server; llama.cpp
# renamed rpc-server to ggml-rpc-server (ggml-org/llama.cpp#25045), so an old build has
# only rpc-server, with the same -H/-p/-c flags.
HF_ENGINES=(ggml-rpc-server rpc-server llama-server ray vllm haloforge podman docker)
HF_PACKAGES_DEB=(llama.cpp-tools llama.cpp-tools-extra libggml0 libggml0-backend-cpu libggml0-backend-vulkan
  libggml0-backend-hip libggml0-backend-rpc libllama0 mesa-vulkan-drivers rdma-core ibverbs-providers
  libibverbs1 librccl1 rccl firmware-amd-graphics linux-firmware)
HF_PACKAGES_RPM=(llama-cpp ggml rdma-core libibverbs rccl mesa-vulkan-drivers linux-firmware amd-gpu-firmware)

die() {
  printf 'error=%s\n' "$1"
  exit "${2:-1}"
}

# kv KEY VALUE: one fact, control bytes dropped, at most 4096 bytes.
kv() {
  local v=${2//[$'\001'-$'\037'$'\177']/}
  printf '%s=%s\n' "$1" "${v:0:4096}"
}

valid_name() { [[ $1 =~ ^[a-z][a-z0-9-]{0,31}$ ]]; }
valid_host() { [[ $1 =~ ^[A-Za-z0-9][A-Za-z0-9.:-]{0,252}$ ]]; }
valid_port() { [[ $1 =~ ^[0-9]{1,5}$ ]] && (($1 >= 1 && $1 <= 65535)); }
valid_secs() { [[ $1 =~ ^[0-9]{1,5}$ ]]; }
valid_env_name() { [[ $1 =~ ^[A-Za-z_][A-Za-z0-9_]{0,127}$ ]]; }
need() { "$1" "$2" || die "bad argument: $2" 2; }

# expand_home PATH: ~/x is x under the login directory; nothing else is expanded.
expand_home() {
  # shellcheck disable=SC2088 # a literal ~ is what is matched here
  case $1 in
    "~") printf '%s\n' "$HOME" ;;
    "~/"*) printf '%s/%s\n' "$HOME" "${1#"~/"}" ;;
    *) printf '%s\n' "$1" ;;
  esac
}

# resolve NAME: the path of an engine, from PATH or the places distributions use.
resolve() {
  local name=$1 p
  if p=$(command -v -- "$name" 2>/dev/null) && [[ $p == /* ]]; then
    printf '%s\n' "$p"
    return 0
  fi
  for p in /usr/libexec/*/llama/bin/"$name" /usr/local/bin/"$name" "$HOME/.local/bin/$name" \
    "$HOME/go/bin/$name" "$HOME/llama.cpp/build/bin/$name"; do
    if [[ -x $p && -f $p ]]; then
      printf '%s\n' "$p"
      return 0
    fi
  done
  return 1
}

# starttime PID: field 22 of /proc/PID/stat (after the command name, which may hold spaces).
starttime() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  # shellcheck disable=SC2086 # split the fields on purpose
  set -- $stat
  printf '%s\n' "${20}"
}

# alive PID START: the process that started is still this PID.
alive() { [[ $(starttime "$1" 2>/dev/null) == "$2" ]]; }

# members PID: the processes of the session PID leads (started by us with setsid).
members() { { pgrep -s "$1" 2>/dev/null || true; } | tr '\n' ' ' | sed 's/ $//'; }

cmd_status() {
  local f name pid start state code procs
  [[ -d $HF_DIR ]] || return 0
  for f in "$HF_DIR"/*.pid; do
    [[ -e $f ]] || continue
    name=$(basename "$f" .pid)
    read -r pid start <"$f" || continue
    code=$(cat "$HF_DIR/$name.exit" 2>/dev/null || true)
    if alive "$pid" "$start"; then
      state=running
    elif [[ -n $code ]]; then
      state=exited
    else
      state=stopped
    fi
    procs=''
    if [[ -d /proc/$pid ]] && ! alive "$pid" "$start"; then
      procs='' # the PID is someone else's now: nothing of ours can be left in its session
    else
      procs=$(members "$pid")
    fi
    kv "service.$name" "$state pid=$pid code=${code:--} procs=${procs:--}"
  done
}

cmd_start() {
  local name=$1
  shift
  need valid_name "$name"
  local sets=() unsets=()
  while (($#)); do
    case $1 in
      --env)
        [[ ${2:-} == *=* ]] || die "bad argument: --env ${2:-}" 2
        need valid_env_name "${2%%=*}"
        [[ ${2#*=} != *[$'\001'-$'\037'$'\177']* ]] || die "bad argument: --env ${2%%=*}: control character" 2
        sets+=("$2")
        shift 2
        ;;
      --unset)
        need valid_env_name "${2:-}"
        unsets+=(-u "$2")
        shift 2
        ;;
      --)
        shift
        break
        ;;
      *) die "bad argument: $1" 2 ;;
    esac
  done
  (($#)) || die "start $name: no command" 2
  local cmd=$1 path
  shift
  [[ $cmd =~ ^[a-z][a-z0-9.-]*$ ]] || die "bad argument: command $cmd" 2
  path=$(resolve "$cmd") || die "start $name: $cmd: command not found on this node (not on PATH, nor in /usr/libexec/*/llama/bin)"
  mkdir -p "$HF_DIR"
  chmod 0700 "$HF_DIR"
  local pidf=$HF_DIR/$name.pid pid start
  if [[ -f $pidf ]] && read -r pid start <"$pidf" && alive "$pid" "$start"; then
    die "start $name: already running (pid $pid): haloforge cluster down first"
  fi
  [[ -f $HF_DIR/$name.log ]] && mv -f "$HF_DIR/$name.log" "$HF_DIR/$name.log.1"
  rm -f "$HF_DIR/$name.exit"
  local argv=(env "${unsets[@]}" "${sets[@]}" "$path" "$@")
  printf '%q ' "${argv[@]}" >"$HF_DIR/$name.cmd"
  printf '\n' >>"$HF_DIR/$name.cmd"
  # setsid: its own session and process group, so stop reaches every child and nothing
  # ties it to this SSH session. The wrapper records the exit code for status and follow.
  # shellcheck disable=SC2016 # $0 and $@ belong to the wrapper
  setsid bash -c 'rc=0; "$@" || rc=$?; printf "%s\n" "$rc" >"$0"' "$HF_DIR/$name.exit" "${argv[@]}" \
    </dev/null >"$HF_DIR/$name.log" 2>&1 &
  pid=$!
  start=$(starttime "$pid") || start=0
  printf '%s %s\n' "$pid" "$start" >"$pidf"
  sleep 0.3
  if ! alive "$pid" "$start"; then
    kv started "$name pid=$pid"
    kv exited "$(cat "$HF_DIR/$name.exit" 2>/dev/null || echo '?')"
    tail -n 40 "$HF_DIR/$name.log" | sed 's/^/| /'
    exit 1
  fi
  kv started "$name pid=$pid"
  kv path "$path"
  kv log "$HF_DIR/$name.log"
}

stop_one() {
  local name=$1 pidf=$HF_DIR/$1.pid pid start left i
  if [[ ! -f $pidf ]]; then
    kv "stop.$name" "not started"
    return 0
  fi
  read -r pid start <"$pidf" || pid=''
  if [[ -z $pid ]] || { [[ -d /proc/$pid ]] && ! alive "$pid" "$start"; }; then
    rm -f "$pidf"
    kv "stop.$name" "not running"
    return 0
  fi
  left=$(members "$pid")
  if [[ -z $left ]]; then
    rm -f "$pidf"
    kv "stop.$name" "not running"
    return 0
  fi
  kill -TERM -- "-$pid" 2>/dev/null || true
  pkill -TERM -s "$pid" 2>/dev/null || true
  for ((i = 0; i < HF_STOP_GRACE * 5; i++)); do
    left=$(members "$pid")
    [[ -z $left ]] && break
    sleep 0.2
  done
  if [[ -n $left ]]; then
    pkill -KILL -s "$pid" 2>/dev/null || true
    sleep 0.5
    left=$(members "$pid")
  fi
  if [[ -n $left ]]; then
    kv "stop.$name" "left $left"
    return 1
  fi
  rm -f "$pidf"
  kv "stop.$name" "stopped pid=$pid"
}

cmd_stop() {
  local names=() f rc=0
  if [[ ${1:-} == --all ]]; then
    if [[ -d $HF_DIR ]]; then
      for f in "$HF_DIR"/*.pid; do
        [[ -e $f ]] && names+=("$(basename "$f" .pid)")
      done
    fi
  else
    for f in "$@"; do
      need valid_name "$f"
      names+=("$f")
    done
  fi
  for f in "${names[@]}"; do
    stop_one "$f" || rc=1
  done
  return "$rc"
}

cmd_follow() {
  local name=$1 secs=$2 pid start code
  need valid_name "$name"
  need valid_secs "$secs"
  [[ -f $HF_DIR/$name.log ]] || die "follow $name: no log"
  read -r pid start <"$HF_DIR/$name.pid" 2>/dev/null || pid=1
  timeout "$secs" tail -n +1 -F --pid="$pid" "$HF_DIR/$name.log" 2>/dev/null | sed -u 's/^/| /' || true
  code=$(cat "$HF_DIR/$name.exit" 2>/dev/null || true)
  if [[ -n $code ]]; then
    kv state "exited $code"
  elif alive "$pid" "${start:-0}"; then
    kv state running
  else
    kv state stopped
  fi
}

cmd_log() {
  local name=$1 lines=$2
  need valid_name "$name"
  need valid_secs "$lines"
  [[ -f $HF_DIR/$name.log ]] || die "log $name: no log"
  tail -n "$lines" "$HF_DIR/$name.log" | sed 's/^/| /'
}

cmd_http() {
  local host=$1 port=$2 path=$3
  need valid_host "$host"
  need valid_port "$port"
  [[ $path =~ ^/[A-Za-z0-9/_.-]{0,200}$ ]] || die "bad argument: $path" 2
  if ! exec 3<>"/dev/tcp/$host/$port" 2>/dev/null; then
    printf 'HTTP/1.0 000 connect failed\r\n\r\n'
    return 0
  fi
  printf 'GET %s HTTP/1.0\r\nHost: %s:%s\r\nUser-Agent: haloforge-cluster\r\nConnection: close\r\n\r\n' "$path" "$host" "$port" >&3
  timeout 10 head -c 1048576 <&3 || true
  exec 3<&-
}

# tcp_result HOST PORT SECONDS: open, refused (the host answered: nothing listens),
# timeout (dropped: a firewall or no host), unreachable (rejected or no route).
tcp_result() {
  local err rc=0
  # shellcheck disable=SC2016 # $0 and $1 belong to the inner shell
  err=$(timeout "$3" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" 2>&1) || rc=$?
  if ((rc == 0)); then
    echo open
  elif ((rc == 124)); then
    echo timeout
  elif [[ $err == *"Connection refused"* ]]; then
    echo refused
  elif [[ $err == *"No route to host"* || $err == *"Network is unreachable"* ]]; then
    echo unreachable
  else
    echo "error ${err##*: }"
  fi
}

cmd_tcp() {
  need valid_host "$1"
  need valid_port "$2"
  need valid_secs "$3"
  kv tcp "$(tcp_result "$1" "$2" "$3")"
}

cmd_run() {
  local secs=$1
  need valid_secs "$secs"
  shift
  [[ ${1:-} == -- ]] || die "bad argument: ${1:-}" 2
  shift
  (($#)) || die "run: no command" 2
  local cmd=$1 path
  shift
  [[ $cmd =~ ^[a-z][a-z0-9.-]*$ ]] || die "bad argument: command $cmd" 2
  path=$(resolve "$cmd") || die "run: $cmd: command not found on this node"
  timeout "$secs" "$path" "$@" </dev/null
}

probe_packages() {
  local name ver status
  if command -v dpkg-query >/dev/null 2>&1; then
    while IFS=$'\t' read -r name ver status; do
      [[ $status == install\ ok\ installed ]] && kv "pkg.$name" "$ver"
    done < <(dpkg-query -W -f='${Package}\t${Version}\t${Status}\n' "${HF_PACKAGES_DEB[@]}" 2>/dev/null || true)
  elif command -v rpm >/dev/null 2>&1; then
    while IFS=$'\t' read -r name ver; do
      [[ -n $ver ]] && kv "pkg.$name" "$ver"
    done < <(rpm -q --qf '%{NAME}\t%{VERSION}-%{RELEASE}\n' "${HF_PACKAGES_RPM[@]}" 2>/dev/null | grep -v 'is not installed' || true)
  fi
}

probe_net() {
  local d ifname f line
  while IFS= read -r line; do
    kv ipaddr "$line"
  done < <(ip -o addr show 2>/dev/null || true)
  for d in /sys/class/net/*; do
    [[ -e $d ]] || continue
    ifname=${d##*/}
    [[ $ifname =~ ^[A-Za-z0-9_.:@-]+$ ]] || continue
    for f in mtu speed operstate; do
      kv "net.$ifname.$f" "$(cat "$d/$f" 2>/dev/null || echo '?')"
    done
  done
}

# probe_gpu: what doctor would start from when haloforge is not installed on the node:
# /dev/kfd access and the KFD topology's gfx_target_version of each GPU node.
probe_gpu() {
  local p v
  if [[ ! -e /dev/kfd ]]; then
    kv kfd missing
  elif [[ -r /dev/kfd && -w /dev/kfd ]]; then
    kv kfd ok
  else
    kv kfd denied
  fi
  for p in /sys/class/kfd/kfd/topology/nodes/*/properties; do
    [[ -r $p ]] || continue
    v=$(awk '$1 == "gfx_target_version" { print $2 }' "$p")
    [[ -n $v && $v != 0 ]] && kv gfx_target_version "$v"
  done
  return 0
}

# probe_logind: what systemd-logind does when the user's last session (this SSH login)
# ends: RemoveIPC (default yes) deletes the user's shared memory and semaphores, which Ray
# and vLLM live on, and KillUserProcesses kills what haloforge started — unless the user
# lingers (loginctl enable-linger).
probe_logind() {
  local f v kill='' ipc=''
  if [[ ! -d /run/systemd/system ]]; then
    kv systemd no
    return 0
  fi
  kv systemd yes
  kv linger "$(loginctl show-user "$(id -un)" -p Linger --value 2>/dev/null || echo '?')"
  for f in /etc/systemd/logind.conf /etc/systemd/logind.conf.d/*.conf; do
    [[ -r $f ]] || continue
    v=$(awk -F= '$1 ~ /^[[:space:]]*RemoveIPC[[:space:]]*$/ { gsub(/[[:space:]]/, "", $2); print $2 }' "$f" | tail -n 1)
    [[ -n $v ]] && ipc=$v
    v=$(awk -F= '$1 ~ /^[[:space:]]*KillUserProcesses[[:space:]]*$/ { gsub(/[[:space:]]/, "", $2); print $2 }' "$f" | tail -n 1)
    [[ -n $v ]] && kill=$v
  done
  # logind's own answer, when the bus can be asked, wins over the files (and the built-in
  # defaults: RemoveIPC yes; KillUserProcesses as the distribution built it).
  v=$(busctl get-property org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager RemoveIPC 2>/dev/null) || v=''
  [[ $v == "b true" ]] && ipc=yes
  [[ $v == "b false" ]] && ipc=no
  v=$(busctl get-property org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager KillUserProcesses 2>/dev/null) || v=''
  [[ $v == "b true" ]] && kill=yes
  [[ $v == "b false" ]] && kill=no
  kv removeipc "${ipc:-default}"
  kv killuserprocesses "${kill:-default}"
  return 0
}

probe_rdma() {
  local s dev port
  for s in /sys/class/infiniband/*/ports/*/state; do
    [[ -e $s ]] || continue
    port=${s%/state}
    port=${port##*/}
    dev=${s#/sys/class/infiniband/}
    dev=${dev%%/*}
    kv "rdma.$dev.$port.state" "$(cat "$s" 2>/dev/null || echo '?')"
    kv "rdma.$dev.$port.link_layer" "$(cat "/sys/class/infiniband/$dev/ports/$port/link_layer" 2>/dev/null || echo '?')"
  done
}

probe_rccl() {
  local lib seen=0
  while IFS= read -r lib; do
    [[ -f $lib ]] || continue
    seen=$((seen + 1))
    ((seen <= 4)) || break
    # Code objects name their target: a librccl built without gfx1151 has no such string.
    if grep -q -a -m1 -F gfx1151 "$lib" 2>/dev/null; then
      kv "rccl.$lib" gfx1151
    else
      kv "rccl.$lib" no-gfx1151
    fi
  done < <({
    ldconfig -p 2>/dev/null | awk '/librccl\.so/ { print $NF }'
    ls /opt/rocm*/lib/librccl.so* 2>/dev/null
  } | sort -u)
}

probe_firewall() {
  local z line ifname
  if command -v firewall-cmd >/dev/null 2>&1; then
    kv firewalld "$(firewall-cmd --state 2>&1 | head -n 1)"
    while IFS= read -r line; do
      ifname=$(awk '{ print $2 }' <<<"$line")
      ifname=${ifname%%@*}
      [[ $ifname =~ ^[A-Za-z0-9_.:-]+$ && $ifname != lo ]] || continue
      z=$(timeout 5 firewall-cmd --get-zone-of-interface="$ifname" 2>&1 | head -n 1) || true
      kv "zone.$ifname" "$z"
    done < <(ip -o -4 addr show scope global 2>/dev/null || true)
  else
    kv firewalld absent
  fi
}

cmd_probe() {
  local clock=0 pins='' image='' self='' rccl=0 tcps=()
  while (($#)); do
    case $1 in
      --clock) clock=1 ;;
      --pins)
        [[ ${2:-} =~ ^[A-Za-z0-9_./~+@%,:=-]+$ && ${2:-} != -* ]] || die "bad argument: --pins" 2
        pins=$2
        shift
        ;;
      --image)
        [[ ${2:-} =~ ^[a-z0-9][a-z0-9._/:@-]*$ ]] || die "bad argument: --image" 2
        image=$2
        shift
        ;;
      --self)
        need valid_host "${2:-}"
        self=$2
        shift
        ;;
      --rccl) rccl=1 ;;
      --tcp)
        [[ ${2:-} == *:* ]] || die "bad argument: --tcp" 2
        need valid_host "${2%:*}"
        need valid_port "${2##*:}"
        tcps+=("$2")
        shift
        ;;
      *) die "bad argument: $1" 2 ;;
    esac
    shift
  done
  if ((clock)); then
    # haloforge times the round trip of this exchange and takes the middle of it.
    echo clock-ready
    read -r _ || true
    kv clock "$(date +%s.%N)"
  fi
  kv probe 1
  kv hostname "$(hostname 2>/dev/null || cat /proc/sys/kernel/hostname)"
  kv user "$(id -un)"
  kv uid "$(id -u)"
  kv kernel "$(uname -r)"
  if [[ -r /etc/os-release ]]; then
    kv os.id "$(awk -F= '$1 == "ID" { gsub(/"/, "", $2); print $2 }' /etc/os-release)"
    kv os.version "$(awk -F= '$1 == "VERSION_ID" { gsub(/"/, "", $2); print $2 }' /etc/os-release)"
  fi
  kv memlock "$(ulimit -l)"
  probe_gpu
  probe_logind
  probe_net
  probe_rdma
  probe_packages
  probe_firewall
  local b p
  for b in "${HF_ENGINES[@]}"; do
    p=$(resolve "$b") && kv "bin.$b" "$p"
  done
  for b in pgrep setsid timeout tail ip; do
    command -v "$b" >/dev/null 2>&1 || kv "missing.$b" "not installed"
  done
  ((rccl)) && probe_rccl
  if [[ -n $pins ]]; then
    p=$(expand_home "$pins")
    kv pins.path "$p"
    if [[ -f $p && -r $p ]]; then
      kv pins.sha256 "$(sha256sum <"$p" | awk '{ print $1 }')"
    else
      kv pins.error "no readable file at $p"
    fi
  fi
  if p=$(resolve haloforge); then
    local args=(cluster node-facts)
    [[ -n $pins ]] && args+=(--pins "$(expand_home "$pins")")
    # One line of JSON (up to 256 KiB: a doctor report), so not through kv's 4 KiB cut.
    printf 'facts=%s\n' "$(cd "$HOME" && timeout 30 "$p" "${args[@]}" 2>/dev/null | head -c 262144 | tr -d '\000-\037\177')"
  fi
  if [[ -n $image ]]; then
    kv image.ref "$image"
    for b in podman docker; do
      if p=$(resolve "$b"); then
        kv image.digest "$(timeout 20 "$p" image inspect --format '{{.Digest}}' "$image" 2>&1 | head -n 1)"
        break
      fi
    done
  fi
  if [[ -n $self ]] && command -v getent >/dev/null 2>&1; then
    while read -r p _; do
      kv self.ip "$p"
    done < <(getent ahosts "$self" 2>/dev/null | awk '{ print $1 }' | sort -u)
  fi
  for p in "${tcps[@]}"; do
    kv "tcp.$p" "$(tcp_result "${p%:*}" "${p##*:}" 3)"
  done
  cmd_status
  kv end 1
}

main() {
  (($#)) || die "no command" 2
  local cmd=$1
  shift
  case $cmd in
    probe) cmd_probe "$@" ;;
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    status) cmd_status ;;
    follow) cmd_follow "${1:-}" "${2:-}" ;;
    log) cmd_log "${1:-}" "${2:-}" ;;
    http) cmd_http "${1:-}" "${2:-}" "${3:-}" ;;
    tcp) cmd_tcp "${1:-}" "${2:-}" "${3:-}" ;;
    run) cmd_run "$@" ;;
    *) die "unknown command: $cmd" 2 ;;
  esac
}

main "$@"

# shellcheck shell=bash
# The llama.cpp ROCm ladder's logic (sourced by 01-run-ladder.sh and 02-verify.sh; bats
# tests it with a stand-in for the container engine).

# Lines that llama.cpp prints right before the gfx1151 hangs (the failure families
# llamacpp-rocm-load-hang-sdma, llamacpp-rocm-graph-reserve-hang). They appear in healthy
# runs too: only silence after them counts.
LADDER_MARKERS=(
  'load_all_data: using async uploads'
  'graph_reserve: reserving a graph for ubatch'
)

# ladder_rungs FILE: the rungs, comments and blank lines dropped, each checked for six
# tab-separated fields; prints them unchanged.
ladder_rungs() {
  awk -F '\t' '
		/^[ \t]*(#|$)/ { next }
		NF != 6 { printf "%s:%d: want 6 tab-separated fields, got %d\n", FILENAME, FNR, NF > "/dev/stderr"; bad = 1; next }
		{ print }
		END { exit bad }
	' "$1"
}

# ladder_marker LINE: print the hang-prone marker LINE contains, if any.
ladder_marker() {
  local m
  for m in "${LADDER_MARKERS[@]}"; do
    if [[ "$1" == *"$m"* ]]; then
      printf '%s\n' "$m"
      return 0
    fi
  done
  return 1
}

# stall_watch TIMEOUT LOG: copy stdin to stdout and LOG line by line. Once a marker has
# been seen, TIMEOUT seconds without a new line is a hang; before that the limit is three
# times as long (loading a big model can be quiet). Returns 0 at end of input, 3 on a hang,
# with "hung at <marker>" or "no output for Ns after: <line>" in STALL_REASON.
stall_watch() {
  local timeout=$1 log=$2 line='' last='' marker='' m limit code
  STALL_REASON=''
  while :; do
    limit=$((timeout * 3))
    [[ -n "$marker" ]] && limit=$timeout
    code=0
    IFS= read -r -t "$limit" line || code=$?
    if ((code > 128)); then
      if [[ -n "$marker" ]]; then
        STALL_REASON="hung at $marker (no output for ${limit}s)"
      else
        STALL_REASON="no output for ${limit}s after: ${last:-<nothing>}"
      fi
      return 3
    fi
    if ((code != 0)) && [[ -z "$line" ]]; then
      return 0
    fi
    printf '%s\n' "$line"
    printf '%s\n' "$line" >>"$log"
    [[ -n "$line" ]] && last=$line
    m=$(ladder_marker "$line") && marker=$m
    ((code == 0)) || return 0
  done
}

# host_check_ok SPEC: for "FILE=VALUE", true when FILE holds VALUE; "-" is always true.
# Prints what the host has when it differs.
host_check_ok() {
  local spec=$1 file want have
  [[ "$spec" == - ]] && return 0
  file=${spec%%=*} want=${spec#*=}
  have=$(cat "${HALOFORGE_SYSFS_ROOT:-}$file" 2>/dev/null || echo unknown)
  [[ "$have" == "$want" ]] && return 0
  printf '%s\n' "$have"
  return 1
}

# host_change_hint SPEC: the exact command that makes the host match SPEC.
host_change_hint() {
  local file=${1%%=*} want=${1#*=} param
  case $file in
    /sys/module/*/parameters/*)
      param=$(cut -d/ -f4 <<<"$file").${file##*/}=$want
      if command -v grubby >/dev/null 2>&1; then
        printf 'sudo grubby --update-kernel=ALL --args=%s && sudo reboot\n' "$param"
      else
        printf 'add %s to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub, then: sudo update-grub && sudo reboot\n' "$param"
      fi
      ;;
    *) printf 'set %s to %s\n' "$file" "$want" ;;
  esac
}

# bench_generated RESULTS: true when the "TEST<TAB>t/s" lines of lib/llama_gpu_evidence.py
# have a generation (tg) row with a positive speed: the model loaded and produced tokens.
bench_generated() {
  awk -F '\t' '$1 ~ /^tg/ && $2 + 0 > 0 { ok = 1 } END { exit !ok }' <<<"$1"
}

# json_str S: S as a JSON string.
json_str() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\t'/\\t}
  s=${s//$'\r'/}
  s=${s//$'\n'/\\n}
  printf '"%s"' "$s"
}

# ladder_record TSV ID STATUS SECONDS IMAGE DETAIL LOG: append one result row.
ladder_record() {
  local tsv=$1
  shift
  local IFS=$'\t'
  printf '%s\n' "$*" >>"$tsv"
}

# ladder_json TSV: the recorded rows as the ladder.json document.
ladder_json() {
  local id status secs image detail log first=1
  printf '{\n  "track": "llamacpp-rocm",\n  "status": "experimental",\n  "results": ['
  while IFS=$'\t' read -r id status secs image detail log; do
    ((first)) || printf ','
    first=0
    printf '\n    {"id": %s, "status": %s, "seconds": %s, "image": %s, "detail": %s, "log": %s}' \
      "$(json_str "$id")" "$(json_str "$status")" "${secs:-0}" "$(json_str "$image")" \
      "$(json_str "$detail")" "$(json_str "$log")"
  done <"$1"
  printf '\n  ]\n}\n'
}

# run_watched TIMEOUT LOG NAME CMD...: run CMD (a container named NAME) under stall_watch.
# On a hang the container is removed and the command killed. Returns stall_watch's status
# (0 or 3); the command's own exit status is left in WATCH_EXIT.
run_watched() {
  local timeout=$1 log=$2 name=$3 fifo pid wrc=0 prc=0
  shift 3
  fifo=$(mktemp -u "${TMPDIR:-/tmp}/hf-ladder.XXXXXX")
  mkfifo "$fifo"
  printf '+ %s\n' "$(quote_cmd "$@")"
  "$@" >"$fifo" 2>&1 &
  pid=$!
  stall_watch "$timeout" "$log" <"$fifo" || wrc=$?
  if ((wrc == 3)); then
    log_warn "$STALL_REASON: stopping $name"
    "$(engine)" rm -f "$name" >/dev/null 2>&1 || true
    kill "$pid" 2>/dev/null || true
  fi
  wait "$pid" || prc=$?
  rm -f "$fifo"
  # shellcheck disable=SC2034 # read by the caller
  WATCH_EXIT=$prc
  return "$wrc"
}

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

# ladder_rungs FILE: the rungs, comments and blank lines dropped, each checked for seven
# tab-separated fields and a "runs" of image or prebuilt; prints them unchanged.
ladder_rungs() {
  awk -F '\t' '
		/^[ \t]*(#|$)/ { next }
		NF != 7 { printf "%s:%d: want 7 tab-separated fields, got %d\n", FILENAME, FNR, NF > "/dev/stderr"; bad = 1; next }
		$6 != "image" && $6 != "prebuilt" { printf "%s:%d: runs is \"%s\", want image or prebuilt\n", FILENAME, FNR, $6 > "/dev/stderr"; bad = 1; next }
		{ print }
		END { exit bad }
	' "$1"
}

# prebuilt_dir: where the checked prebuilt build is unpacked, one directory per sha256 of
# LLAMACPP_ROCM_PREBUILT_SHA256 (a new pin is a new directory; the old one is never reused).
prebuilt_dir() {
  local sum=${LLAMACPP_ROCM_PREBUILT_SHA256#sha256:}
  printf '%s/llamacpp-rocm/prebuilt/%s\n' "$HALOFORGE_STATE_DIR" "${sum:0:16}"
}

# prebuilt_fetch: download LLAMACPP_ROCM_PREBUILT_URL over HTTPS only, refuse it unless its
# sha256 is LLAMACPP_ROCM_PREBUILT_SHA256, unpack it (python3's zipfile: no unzip needed) and
# keep it in prebuilt_dir with llama-bench at its top. Nothing is unpacked or run before the
# checksum matches; an unpacked build that is already there is reused.
prebuilt_fetch() {
  local url=$LLAMACPP_ROCM_PREBUILT_URL want=${LLAMACPP_ROCM_PREBUILT_SHA256#sha256:}
  local dir zip got tmp top
  dir=$(prebuilt_dir)
  [[ "$want" =~ ^[0-9a-f]{64}$ ]] || die "LLAMACPP_ROCM_PREBUILT_SHA256 must be sha256:<64 hex>, got '$LLAMACPP_ROCM_PREBUILT_SHA256'" 2
  [[ "${url%%:*}" == https ]] || die "LLAMACPP_ROCM_PREBUILT_URL must be an https URL, got '$url'" 2
  if ! is_dry_run && [[ -x "$dir/llama-bench" && -f "$dir/.sha256" && "$(cat "$dir/.sha256")" == "$want" ]]; then
    log_ok "prebuilt build already unpacked and checked: $dir"
    return 0
  fi
  zip=$dir.zip
  is_dry_run || mkdir -p "$(dirname "$dir")"
  run curl -fL --proto '=https' --tlsv1.2 --retry 3 --connect-timeout 20 -o "$zip.part" "$url"
  if is_dry_run; then
    printf '[dry-run] sha256sum %s must be %s, else the download is refused\n' "$zip.part" "$want"
    run python3 -m zipfile -e "$zip.part" "$dir.tmp"
    return 0
  fi
  got=$(sha256sum "$zip.part" | cut -d' ' -f1)
  if [[ "$got" != "$want" ]]; then
    rm -f "$zip.part"
    die "the download of $url has sha256 $got, not the pinned $want: refused, nothing unpacked. If upstream replaced the file on purpose, pin the new sum with --set LLAMACPP_ROCM_PREBUILT_SHA256=sha256:<sum> after checking where it comes from" 3
  fi
  log_ok "sha256 $got matches LLAMACPP_ROCM_PREBUILT_SHA256"
  tmp=$dir.tmp
  rm -rf "$tmp"
  run python3 -m zipfile -e "$zip.part" "$tmp"
  # A zip with one top directory (llama-bNNNN-…/) is unpacked one level down.
  top=$tmp
  if [[ ! -e "$tmp/llama-bench" ]] && (($(find "$tmp" -mindepth 1 -maxdepth 1 | wc -l) == 1)); then
    top=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d)
  fi
  [[ -f "$top/llama-bench" ]] || {
    rm -rf "$tmp"
    die "the prebuilt build from $url has no llama-bench at its top: refused" 3
  }
  chmod +x "$top"/llama-* 2>/dev/null || true
  printf '%s\n' "$want" >"$top/.sha256"
  rm -rf "$dir"
  mv "$top" "$dir"
  rm -rf "$tmp" "$zip.part"
  log_ok "prebuilt build unpacked: $dir"
}

# rung_answers ID LOG: a rung's numerical check, after its speed and placement passed: a rung
# counts as working only when what it computes is right, since gfx1151 ROCm builds have run
# fast and answered wrong (perplexity 1334 against 6.8 on CPU and Vulkan: noamsto/nix-amd-ai#105;
# only <unused49>: ROCm/TheRock#7714). Two checks, each when the rung's image (or prebuilt
# build) ships its tool, both in the rung's own container (RUNG_RUN: the engine's run words
# with the rung's devices, environment and mounts, up to the image; RUNG_BIN: "" or the
# prebuilt build's directory with a trailing slash):
#   - test-backend-ops -o MUL_MAT -b ROCm0: ggml's own comparison of the ROCm matrix
#     multiplications with the CPU backend (lib/llama_gpu_evidence.py reads it), no model;
#   - the answers (lib/llama.sh llama_answers): llama-server on ROCm0 with the ladder's model
#     against haloforge's reference for the same GGUF on the image's CPU backend, recorded
#     once and kept: this one also sees the host-memory path of nix-amd-ai#105, which a
#     matrix test on device memory does not.
# It sets ANSWERS (verified when a check ran and none failed, wrong when one failed,
# not-verified when none could run) and ANSWERS_DETAIL, which ladder.json records per rung.
# shellcheck disable=SC2034 # ANSWERS* are read by the caller
rung_answers() {
  local id=$1 rc tool opslog
  local -a proved=() nommap=()
  ANSWERS=not-verified ANSWERS_DETAIL=''
  tool=${RUNG_BIN:-}test-backend-ops
  if "${RUNG_RUN[@]}" sh -c "command -v $tool" >/dev/null 2>&1; then
    opslog=$HALOFORGE_RUN_DIR/ladder-$id-backend-ops.log
    rc=0
    "${RUNG_RUN[@]}" "$tool" -o MUL_MAT -b ROCm0 >"$opslog" 2>&1 || rc=$?
    tail -n 4 "$opslog"
    if ((rc != 0)); then
      ANSWERS=wrong ANSWERS_DETAIL="test-backend-ops -o MUL_MAT -b ROCm0 failed (exit $rc): ROCm0's matrix multiplications differ from the CPU's ($opslog)"
      return 0
    fi
    if ! llama_gpu_evidence backend-ops "$opslog" --device ROCm0; then
      ANSWERS_DETAIL="test-backend-ops proved nothing: $EVIDENCE_WHY ($opslog)"
    else
      proved+=("$EVIDENCE_SUMMARY (matches the CPU backend)")
    fi
  else
    log_info "the rung ships no $tool: its matrix multiplications are not compared with the CPU's"
  fi
  if "${RUNG_RUN[@]}" sh -c "command -v ${RUNG_BIN:-}llama-server" >/dev/null 2>&1; then
    mapfile -t nommap < <("${RUNG_RUN[@]}" "${RUNG_BIN:-}llama-server" --help 2>&1 | llama_nommap_flags || true)
    LLAMA_SERVER_PREFIX=("${RUNG_SERVER[@]}") LLAMA_SERVER_BIN=${RUNG_BIN:-}llama-server
    llama_answers "$LLAMA_MODEL" "/models/$(basename "$LLAMA_MODEL")" -ngl 99 -fa on --device ROCm0 "${nommap[@]}" || true
    LLAMA_SERVER_PREFIX=() LLAMA_SERVER_BIN=''
    case $ANSWERS_VERDICT in
      right) proved+=("answers: $ANSWERS_LINE") ;;
      wrong)
        ANSWERS=wrong ANSWERS_DETAIL=$ANSWERS_LINE
        return 0
        ;;
      *) ANSWERS_DETAIL="${ANSWERS_DETAIL:+$ANSWERS_DETAIL; }answers: $ANSWERS_LINE" ;;
    esac
  else
    log_info "the rung ships no ${RUNG_BIN:-}llama-server: its answers are not compared with a reference"
  fi
  if ((${#proved[@]})); then
    ANSWERS=verified
    ANSWERS_DETAIL=$(
      IFS=';'
      printf '%s' "${proved[*]}"
    )
    ANSWERS_DETAIL=${ANSWERS_DETAIL//;/; }
    return 0
  fi
  ANSWERS_DETAIL="no numerical check could run (${ANSWERS_DETAIL:-the rung ships neither test-backend-ops nor llama-server}): its speed alone does not say it computes right"
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

# ladder_record TSV ID STATUS SECONDS IMAGE DETAIL ANSWERS LOG: append one result row.
ladder_record() {
  local tsv=$1
  shift
  local IFS=$'\t'
  printf '%s\n' "$*" >>"$tsv"
}

# ladder_json TSV: the recorded rows as the ladder.json document.
ladder_json() {
  local id status secs image detail answers log first=1
  printf '{\n  "track": "llamacpp-rocm",\n  "status": "experimental",\n  "results": ['
  while IFS=$'\t' read -r id status secs image detail answers log; do
    ((first)) || printf ','
    first=0
    printf '\n    {"id": %s, "status": %s, "seconds": %s, "image": %s, "detail": %s, "answers": %s, "log": %s}' \
      "$(json_str "$id")" "$(json_str "$status")" "${secs:-0}" "$(json_str "$image")" \
      "$(json_str "$detail")" "$(json_str "$answers")" "$(json_str "$log")"
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

# shellcheck shell=bash
# The llama.cpp tracks' shared proof that a run used the GPU (sourced after common.sh by
# llamacpp-vulkan, llamacpp-rocm and llamacpp-distro). llama-bench's backend column and its
# JSON "backends" name the backends compiled in, not the device that ran, and
# test-backend-ops passes a device it skipped: llama_gpu_evidence.py reads the device
# evidence instead (its header says what counts).

# llama_gpu_evidence MODE FILE ARGS...: run lib/llama_gpu_evidence.py MODE FILE ARGS. On
# success returns 0 with EVIDENCE_SUMMARY (one line) and EVIDENCE_RESULTS ("TEST<TAB>t/s"
# lines, bench only); otherwise returns 1 with the reason in EVIDENCE_WHY. Call it directly,
# not in $(…), so the variables reach the caller.
# shellcheck disable=SC2034 # EVIDENCE_* are read by the caller
llama_gpu_evidence() {
  local err out rc=0
  EVIDENCE_SUMMARY='' EVIDENCE_RESULTS='' EVIDENCE_WHY=''
  err=$(mktemp "${TMPDIR:-/tmp}/hf-evidence.XXXXXX")
  out=$(python3 "$HF_LIB_DIR/llama_gpu_evidence.py" "$@" 2>"$err") || rc=$?
  EVIDENCE_WHY=$(<"$err")
  rm -f "$err"
  if ((rc != 0)); then
    [[ -n "$EVIDENCE_WHY" ]] || EVIDENCE_WHY="llama_gpu_evidence.py $1 failed (exit $rc)"
    return 1
  fi
  EVIDENCE_SUMMARY=${out%%$'\n'*}
  if [[ "$out" == *$'\n'* ]]; then
    EVIDENCE_RESULTS=${out#*$'\n'}
  fi
  return 0
}

# llama_nommap_flags: read a llama.cpp tool's --help on stdin and print, one a line, the switch
# that loads the model without memory mapping: --no-mmap where it is listed (llama-server of
# older builds); -mmp 0 where llama-bench lists -mmp; -lm none where --load-mode replaced them
# (both tools of Debian sid's build 11669: "-lm, --load-mode MODE … none: no special loading
# mode"); nothing when none is listed. Whole option words only: llama-server also lists
# --mmproj and --no-mmproj. Strix Halo owners run with flash attention and without mmap
# (kyuz0's toolboxes README: "Always use flash attention (-fa 1) and no-mmap (--no-mmap) on
# Strix Halo to avoid crashes/slowdowns").
llama_nommap_flags() {
  local help
  help=$(cat)
  if grep -qE -- '(^|[[:space:],])--no-mmap([[:space:],]|$)' <<<"$help"; then
    printf '%s\n' --no-mmap
  elif grep -qE -- '(^|[[:space:],])-mmp([[:space:],]|$)' <<<"$help"; then
    printf '%s\n' -mmp 0
  elif grep -qE -- '(^|[[:space:],])--load-mode([[:space:],]|$)' <<<"$help"; then
    printf '%s\n' -lm none
  fi
}

# The answers check of the llama.cpp tracks (haloforge verify, steps/verify): llama-server
# with the backend under test answers haloforge verify's prompt set, and its answers are
# compared position by position with haloforge's reference for the same GGUF: recorded from
# llama.cpp's CPU backend (LLAMA_TRUSTED_ARGS, default -ngl 0 --device none) when none is kept
# in the state dir (one per model SHA-256 and prompt set), reused after. A right stack and a
# wrong one differ there, where a benchmark sees only speed.
# A container track runs llama-server through LLAMA_SERVER_PREFIX (an array: the podman run
# words up to the image, --network host and the model's directory mounted; the word {name}
# becomes the container's name, which the stop uses); empty runs llama-server here (the box).
# LLAMA_SERVER_BIN names the server when it is not llama-server on PATH (a prebuilt build).

declare -p LLAMA_SERVER_PREFIX >/dev/null 2>&1 || LLAMA_SERVER_PREFIX=()

# free_port: a TCP port nothing listens on at 127.0.0.1 right now.
free_port() {
  local p i
  for ((i = 0; i < 64; i++)); do
    p=$((20000 + RANDOM % 20000))
    if ! (: </dev/tcp/127.0.0.1/"$p") 2>/dev/null; then
      printf '%s\n' "$p"
      return 0
    fi
  done
  return 1
}

# llama_server_start NAME PORT ARGS...: llama-server ARGS on 127.0.0.1:PORT in the
# background, its output in $HALOFORGE_RUN_DIR/NAME.log; waits until /health answers (at
# most LLAMA_READY_TIMEOUT seconds, default 600: a large model read from disk). Sets
# LLAMA_SERVER_PID; fails with the log's last lines when the server ends or never answers.
llama_server_start() {
  local name=$1 port=$2 i w
  shift 2
  local -a cmd=()
  for w in "${LLAMA_SERVER_PREFIX[@]}"; do
    cmd+=("${w//\{name\}/$name}")
  done
  cmd+=("${LLAMA_SERVER_BIN:-llama-server}" "$@" --host 127.0.0.1 --port "$port")
  local log=$HALOFORGE_RUN_DIR/$name.log
  mkdir -p "$HALOFORGE_RUN_DIR"
  log_info "+ $(quote_cmd "${cmd[@]}")   (log: $log)"
  "${cmd[@]}" >"$log" 2>&1 &
  LLAMA_SERVER_PID=$!
  for ((i = 0; i < ${LLAMA_READY_TIMEOUT:-600} * 5; i++)); do
    if (exec 3<>/dev/tcp/127.0.0.1/"$port" && printf 'GET /health HTTP/1.0\r\n\r\n' >&3 && head -n1 <&3 | grep -q ' 200') 2>/dev/null; then
      return 0
    fi
    if ! kill -0 "$LLAMA_SERVER_PID" 2>/dev/null; then
      tail -n 8 "$log" >&2
      log_error "llama-server ($name) ended before it answered /health"
      return 1
    fi
    sleep 0.2
  done
  tail -n 8 "$log" >&2
  log_error "llama-server ($name) did not answer /health within ${LLAMA_READY_TIMEOUT:-600}s"
  llama_server_stop "$name"
  return 1
}

# llama_server_stop NAME: stop the server llama_server_start started (its container, or its
# process: SIGTERM, SIGKILL after 10 s).
llama_server_stop() {
  local name=$1 pid=${LLAMA_SERVER_PID:-} i
  if ((${#LLAMA_SERVER_PREFIX[@]})); then
    "${LLAMA_SERVER_PREFIX[0]}" stop -t 5 "$name" >/dev/null 2>&1 || true
  fi
  [[ -n $pid ]] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  LLAMA_SERVER_PID=''
}

# llama_answers MODEL SERVER_MODEL ARGS...: whether llama-server on the backend under test
# (ARGS: its device flags) answers right. MODEL is the GGUF as haloforge sees it (its hash
# keys the reference), SERVER_MODEL as llama-server sees it (a container's mount). Sets
# ANSWERS_VERDICT (right, wrong, not-verified or error) and ANSWERS_LINE (haloforge verify's
# outcome line, which says which check ran and what it proved, or why no verdict); returns 0
# only when right. haloforge verify's lines go to the log, so a WRONG OUTPUT line is there for
# the diagnosis.
# shellcheck disable=SC2034 # ANSWERS_* are read by the caller
llama_answers() {
  local model=$1 served=$2 hf port out code
  shift 2
  local -a trusted=(-ngl 0 --device none)
  [[ -n ${LLAMA_TRUSTED_ARGS:-} ]] && read -r -a trusted <<<"$LLAMA_TRUSTED_ARGS"
  local backend=${LLAMA_TRUSTED_BACKEND:-CPU}
  ANSWERS_VERDICT=error ANSWERS_LINE=''
  if is_dry_run; then
    run "${HALOFORGE_BIN:-haloforge}" verify --reference-for "$model" --cached
    run "${LLAMA_SERVER_PREFIX[@]}" "${LLAMA_SERVER_BIN:-llama-server}" -m "$served" "${trusted[@]}" --host 127.0.0.1 --port PORT
    run "${HALOFORGE_BIN:-haloforge}" verify --url http://127.0.0.1:PORT --record-for "$model" --backend "$backend"
    run "${LLAMA_SERVER_PREFIX[@]}" "${LLAMA_SERVER_BIN:-llama-server}" -m "$served" "$@" --host 127.0.0.1 --port PORT
    run "${HALOFORGE_BIN:-haloforge}" verify --url http://127.0.0.1:PORT --reference-for "$model" --track "${HALOFORGE_TRACK:-TRACK}"
    ANSWERS_VERDICT=right ANSWERS_LINE='(dry run)'
    return 0
  fi
  if ! hf=$(hf_bin); then
    ANSWERS_LINE="answers not checked: no haloforge binary to check them with (HALOFORGE_BIN='${HALOFORGE_BIN:-}'; the runner sets it)"
    return 1
  fi
  local -a hfv=("$hf" verify --state-dir "$HALOFORGE_STATE_DIR")
  if "${hfv[@]}" --reference-for "$model" --cached; then
    log_ok "haloforge's reference for this GGUF is kept: no $backend server needed"
  else
    log_step "Reference: the same GGUF on llama.cpp's $backend backend"
    port=$(free_port) || {
      ANSWERS_LINE="answers not checked: no free port on 127.0.0.1 for the $backend server"
      return 1
    }
    if ! llama_server_start llama-reference "$port" -m "$served" "${trusted[@]}"; then
      ANSWERS_LINE="answers not checked: llama-server on the $backend backend did not start ($HALOFORGE_RUN_DIR/llama-reference.log)"
      return 1
    fi
    code=0
    "${hfv[@]}" --url "http://127.0.0.1:$port" --record-for "$model" --backend "$backend" || code=$?
    llama_server_stop llama-reference
    if ((code != 0)); then
      ANSWERS_LINE="answers not checked: no reference could be recorded on the $backend backend (haloforge verify exit $code, above)"
      return 1
    fi
  fi
  log_step "Answers: llama-server $(quote_cmd "$@") against the $backend reference"
  port=$(free_port) || {
    ANSWERS_LINE="answers not checked: no free port on 127.0.0.1 for the server under test"
    return 1
  }
  if ! llama_server_start llama-under-test "$port" -m "$served" "$@"; then
    ANSWERS_LINE="answers not checked: llama-server $(quote_cmd "$@") did not start ($HALOFORGE_RUN_DIR/llama-under-test.log)"
    return 1
  fi
  out=$HALOFORGE_RUN_DIR/answers.txt
  code=0
  "${hfv[@]}" --url "http://127.0.0.1:$port" --reference-for "$model" --track "$HALOFORGE_TRACK" >"$out" 2>&1 || code=$?
  llama_server_stop llama-under-test
  cat "$out"
  ANSWERS_LINE=$(grep -E '^(right|WRONG OUTPUT|not verified): ' "$out" | tail -n1 || true)
  case $code in
    0) ANSWERS_VERDICT=right ;;
    1) [[ $ANSWERS_LINE == WRONG* ]] && ANSWERS_VERDICT=wrong || ANSWERS_VERDICT=not-verified ;;
    *) ANSWERS_LINE="answers not checked: haloforge verify exit $code: $(tail -n1 "$out")" ;;
  esac
  [[ $ANSWERS_VERDICT == right ]]
}

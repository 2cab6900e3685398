# shellcheck shell=bash
# haloforge serve's step and haloforge bench's step: run the command haloforge composed
# (steps/serve), and stop all of it when asked. Sourced by scripts/serve/<track>/serve.sh
# and bench.sh after common.sh and hf_init. These scripts live outside the tracks' folders on
# purpose: they are no input of a build, so they do not change any step's cache key.
#
# The command comes as the script's arguments, decided and validated by haloforge; it is run
# as it is, never through eval. A server's step:
#   - box (serve_in_box ARGS...): ARGS run inside $TOOLBOX_NAME through enter_box. The box
#     shares the host's process IDs (distrobox creates it with --pid host), so the engine's
#     PID, written to $HALOFORGE_SERVE_PID_FILE, is one the host can signal. That matters:
#     `podman exec` leaves its process running when its client is killed, so a stop must
#     reach the engine itself.
#   - container (serve_container ARGS...): ARGS are a `podman run --rm --name NAME …`; a stop
#     is `podman stop NAME` (HALOFORGE_SERVE_CONTAINER), the PID the container's main process.
# A stop (SIGTERM, SIGINT or SIGHUP from haloforge's step supervisor) ends the engine with
# SIGTERM, then SIGKILL after HALOFORGE_SERVE_GRACE seconds (default 10), and the step exits
# 0. A server that exits by itself fails the step: a server is not meant to end.
# In a dry run the command is printed and nothing runs.

_HF_SERVE_STOPPING=0

# serve_grace: seconds an engine gets between SIGTERM and SIGKILL.
serve_grace() {
  local g=${HALOFORGE_SERVE_GRACE:-10}
  [[ $g =~ ^[0-9]+$ ]] || g=10
  printf '%s\n' "$g"
}

# serve_pid: the engine's PID from $HALOFORGE_SERVE_PID_FILE ("" when none yet).
serve_pid() {
  local pid=''
  [[ -n "${HALOFORGE_SERVE_PID_FILE:-}" && -r "$HALOFORGE_SERVE_PID_FILE" ]] && read -r pid <"$HALOFORGE_SERVE_PID_FILE"
  [[ $pid =~ ^[0-9]+$ ]] && ((pid > 1)) && printf '%s\n' "$pid"
  return 0
}

# serve_tree PID: PID and every process below it, children first (read from /proc).
serve_tree() {
  local pid=$1 kid
  for kid in $(ps -o pid= --ppid "$pid" 2>/dev/null || true); do
    serve_tree "$kid"
  done
  printf '%s\n' "$pid"
}

# serve_signal SIG PID: SIG to the engine and everything below it; in a box whose processes
# the host may not signal, through the container manager.
serve_signal() {
  local sig=$1 pid=$2 p
  for p in $(serve_tree "$pid"); do
    kill "-$sig" "$p" 2>/dev/null && continue
    if [[ -n "${TOOLBOX_NAME:-}" ]] && kill -0 "$p" 2>&1 | grep -q 'not permitted'; then
      local -a mgr
      read -r -a mgr <<<"$(box_manager)"
      "${mgr[@]}" exec "$TOOLBOX_NAME" kill "-$sig" "$p" 2>/dev/null || true
    fi
  done
}

# serve_stop_pid: SIGTERM the engine, wait the grace, SIGKILL what is left.
serve_stop_pid() {
  local pid i grace
  pid=$(serve_pid)
  [[ -n $pid ]] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  grace=$(serve_grace)
  log_info "haloforge: stopping the server (PID $pid): SIGTERM, SIGKILL after ${grace}s"
  serve_signal TERM "$pid"
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  log_warn "the server did not stop in ${grace}s: SIGKILL"
  serve_signal KILL "$pid"
}

# serve_on_stop: the trap of the host half.
serve_on_stop() {
  _HF_SERVE_STOPPING=1
  trap '' TERM INT HUP
  if [[ -n "${HALOFORGE_SERVE_CONTAINER:-}" ]]; then
    log_info "haloforge: stopping container $HALOFORGE_SERVE_CONTAINER"
    podman stop --time "$(serve_grace)" "$HALOFORGE_SERVE_CONTAINER" >/dev/null 2>&1 || true
  fi
  serve_stop_pid
}

# serve_wait CHILD: wait for the client of the engine; exit 0 after a stop, 1 when the
# engine ended by itself.
serve_wait() {
  local child=$1 code=0
  while :; do
    code=0
    wait "$child" || code=$?
    # A trapped signal interrupts wait with a code above 128; the child may still run.
    kill -0 "$child" 2>/dev/null || break
  done
  if ((_HF_SERVE_STOPPING)); then
    log_info "haloforge: the server stopped"
    _HF_DYING=1
    exit 0
  fi
  log_error "the server exited by itself (exit $code): a server is meant to run until it is stopped"
  _HF_DYING=1
  exit 1
}

# serve_pid_file: where the engine's PID goes, $HALOFORGE_RUN_DIR/<step>.pid by default
# (exported, so that the half in the box writes the same file).
serve_pid_file() {
  : "${HALOFORGE_SERVE_PID_FILE:=$HALOFORGE_RUN_DIR/$HALOFORGE_STEP.pid}"
  export HALOFORGE_SERVE_PID_FILE
}

# serve_in_box ARGS...: run ARGS in the box as the engine; see the file header.
serve_in_box() {
  (($#)) || die "serve: no command to run" 2
  serve_pid_file
  if in_box_now; then
    if declare -F serve_prepare >/dev/null; then
      serve_prepare # the track's own setup inside the box (a venv)
    fi
    if [[ -n "${HALOFORGE_SERVE_PID_FILE:-}" ]] && ! is_dry_run; then
      printf '%s\n' "$$" >"$HALOFORGE_SERVE_PID_FILE"
    fi
    if is_dry_run; then
      run "$@"
      exit 0
    fi
    log_info "+ $(quote_cmd "$@")"
    exec "$@"
  fi
  if is_dry_run; then
    enter_box "$@"
    return 0
  fi
  trap serve_on_stop TERM INT HUP
  rm -f "${HALOFORGE_SERVE_PID_FILE:-/nonexistent}"
  (enter_box "$@") &
  serve_wait $!
}

# serve_container ARGS...: run ARGS (a podman run --rm --name NAME …) as the engine.
serve_container() {
  (($#)) || die "serve: no command to run" 2
  if is_dry_run; then
    run "$@"
    return 0
  fi
  require_env HALOFORGE_SERVE_CONTAINER
  serve_pid_file
  trap serve_on_stop TERM INT HUP
  log_info "+ $(quote_cmd "$@")"
  "$@" &
  local child=$! i pid
  # The container's main process, as the host sees it, for the stop and the activity.
  for ((i = 0; i < 600; i++)); do
    pid=$(podman inspect --format '{{.State.Pid}}' "$HALOFORGE_SERVE_CONTAINER" 2>/dev/null || true)
    if [[ $pid =~ ^[1-9][0-9]*$ ]]; then
      [[ -n "${HALOFORGE_SERVE_PID_FILE:-}" ]] && printf '%s\n' "$pid" >"$HALOFORGE_SERVE_PID_FILE"
      break
    fi
    kill -0 "$child" 2>/dev/null || break
    sleep 0.1
  done
  serve_wait "$child"
}

# bench_file: where the benchmark's results go: $HALOFORGE_RUN_DIR/$HALOFORGE_BENCH_RESULT
# (haloforge names the file; the run directory is known once the run is).
bench_file() {
  [[ ${HALOFORGE_BENCH_RESULT:-} =~ ^[A-Za-z0-9._-]+$ ]] \
    || die "HALOFORGE_BENCH_RESULT='${HALOFORGE_BENCH_RESULT:-}': a plain file name" 2
  printf '%s/%s\n' "$HALOFORGE_RUN_DIR" "$HALOFORGE_BENCH_RESULT"
}

# bench_args ARGS...: ARGS with the word {run_dir} replaced by the run directory, in the
# array BENCH_ARGS (vLLM's --result-dir names it).
bench_args() {
  BENCH_ARGS=()
  local a
  for a in "$@"; do
    BENCH_ARGS+=("${a//\{run_dir\}/$HALOFORGE_RUN_DIR}")
  done
}

# bench_run OUT ARGS...: run a benchmark (ARGS) with its standard output in OUT and its
# standard error in the log; then print OUT and record how long the benchmark itself took
# (hf_fact_time engine: the runner hands it to haloforge bench, which subtracts it to measure
# its own cost; the log says "haloforge: engine time N ms" for the reader).
bench_run() {
  local out=$1
  shift
  (($#)) || die "bench: no command to run" 2
  mkdir -p "$(dirname "$out")"
  if is_dry_run; then
    run "$@"
    return 0
  fi
  local t0 t1 code=0
  log_info "+ $(quote_cmd "$@")"
  t0=$(date +%s%N)
  "$@" >"$out" || code=$?
  t1=$(date +%s%N)
  hf_fact_time engine $(((t1 - t0) / 1000000))
  if ((code != 0)); then
    die "the benchmark failed (exit $code): $(quote_cmd "$1")"
  fi
  cat "$out"
}

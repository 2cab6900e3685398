#!/usr/bin/env bats
# Tests of scripts/serve (the steps of haloforge serve and bench --track): the command is
# run as it is, a stop ends the engine and everything below it and exits 0, an engine that
# exits by itself fails the step, and the bench helpers. The engine is a stand-in (a sleep,
# or a shell that ignores SIGTERM): no inference engine runs in a bats test; podman is a
# stand-in that answers `inspect` with the stand-in engine's PID. The real run is in
# integration-distro.sh.
# shellcheck disable=SC2016

setup() {
  S=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
  T=$BATS_TEST_TMPDIR
  export NO_COLOR=1 HALOFORGE_STATE_DIR=$T/state HALOFORGE_RUN_DIR=$T/state/runs/r1 HALOFORGE_STEP=serve
  export HALOFORGE_SERVE_GRACE=1 HALOFORGE_SERVE_CONTAINER=hf-bats
  mkdir -p "$HALOFORGE_RUN_DIR" "$T/bin"
  unset HALOFORGE_DRY_RUN HALOFORGE_SERVE_PID_FILE HALOFORGE_IN_BOX
  # podman stand-in: inspect prints the PID the engine stand-in wrote; stop records the call.
  cat >"$T/bin/podman" <<'SH'
#!/usr/bin/env bash
case $1 in
  inspect) cat "$HALOFORGE_RUN_DIR/engine.pid" 2>/dev/null || exit 1 ;;
  stop) echo "podman $*" >>"$HALOFORGE_RUN_DIR/podman.calls" ;;
esac
SH
  chmod +x "$T/bin/podman"
  export PATH=$T/bin:$PATH
}

# gone PID: the process no longer runs, or is a zombie its new parent has not reaped yet
# (a test failure otherwise).
gone() {
  kill -0 "$1" 2>/dev/null || return 0
  [[ $(ps -o stat= -p "$1") == Z* ]]
}

lib() { bash -c ". '$S/lib/common.sh'; . '$S/serve/lib.sh'; $1" _ "${@:2}"; }

# serve_in_background CMD...: runs serve_container with CMD as the engine; waits for its PID.
serve_in_background() {
  bash -c ". '$S/lib/common.sh'; . '$S/serve/lib.sh'; hf_init; serve_container \"\$@\"" _ "$@" >"$T/out" 2>&1 &
  SERVE=$!
  for _ in $(seq 100); do
    [[ -s $HALOFORGE_RUN_DIR/serve.pid ]] && break
    sleep 0.05
  done
}

@test "a dry run prints the container command and starts nothing" {
  run env HALOFORGE_DRY_RUN=1 bash -c ". '$S/lib/common.sh'; . '$S/serve/lib.sh'; serve_container podman run --rm --name x img 'a b'"
  [ "$status" -eq 0 ]
  [[ "$output" == *"[dry-run] podman run --rm --name x img 'a b'"* ]]
}

@test "a stop ends the engine and its children, and the step exits 0" {
  serve_in_background bash -c 'echo $$ >"$HALOFORGE_RUN_DIR/engine.pid"; sleep 300 & echo $! >"$HALOFORGE_RUN_DIR/child.pid"; wait'
  [ -s "$HALOFORGE_RUN_DIR/serve.pid" ]
  engine=$(cat "$HALOFORGE_RUN_DIR/serve.pid")
  child=$(cat "$HALOFORGE_RUN_DIR/child.pid")
  kill -TERM "$SERVE"
  wait "$SERVE" && code=0 || code=$?
  [ "$code" -eq 0 ]
  gone "$engine"
  gone "$child"
  grep -q 'podman stop --time 1 hf-bats' "$HALOFORGE_RUN_DIR/podman.calls"
  grep -q 'the server stopped' "$T/out"
}

@test "an engine that ignores SIGTERM is killed after the grace" {
  serve_in_background bash -c 'trap "" TERM; echo $$ >"$HALOFORGE_RUN_DIR/engine.pid"; while :; do sleep 0.1; done'
  engine=$(cat "$HALOFORGE_RUN_DIR/serve.pid")
  kill -TERM "$SERVE"
  wait "$SERVE" && code=0 || code=$?
  [ "$code" -eq 0 ]
  gone "$engine"
  grep -q 'did not stop in 1s: SIGKILL' "$T/out"
}

@test "an engine that exits by itself fails the step" {
  serve_in_background bash -c 'echo $$ >"$HALOFORGE_RUN_DIR/engine.pid"; sleep 0.3; exit 3'
  wait "$SERVE" && code=0 || code=$?
  [ "$code" -eq 1 ]
  grep -q 'the server exited by itself (exit 3)' "$T/out"
}

@test "bench_args puts the run directory in place of {run_dir}" {
  run lib 'bench_args "$@"; printf "%s\n" "${BENCH_ARGS[@]}"' vllm --result-dir '{run_dir}' -v '{run_dir}:{run_dir}:z' 'a b'
  [ "$status" -eq 0 ]
  [ "$output" = "$(printf 'vllm\n--result-dir\n%s\n-v\n%s:%s:z\na b' "$HALOFORGE_RUN_DIR" "$HALOFORGE_RUN_DIR" "$HALOFORGE_RUN_DIR")" ]
}

@test "bench_file takes a plain file name only" {
  run env HALOFORGE_BENCH_RESULT=llama-bench.jsonl bash -c ". '$S/lib/common.sh'; . '$S/serve/lib.sh'; bench_file"
  [ "$output" = "$HALOFORGE_RUN_DIR/llama-bench.jsonl" ]
  run env HALOFORGE_BENCH_RESULT=../x bash -c ". '$S/lib/common.sh'; . '$S/serve/lib.sh'; bench_file"
  [ "$status" -eq 2 ]
}

@test "bench_run keeps the results apart from the log and times the engine in the facts file" {
  printf '#!/usr/bin/env bash\necho "{\\"avg_ts\\": 1}"\nsleep 0.2\necho progress >&2\n' >"$T/bin/engine"
  chmod +x "$T/bin/engine"
  export HALOFORGE_FACTS_FILE=$T/bench.facts
  run lib 'bench_run "$HALOFORGE_RUN_DIR/out.jsonl" engine'
  [ "$status" -eq 0 ]
  [ "$(cat "$HALOFORGE_RUN_DIR/out.jsonl")" = '{"avg_ts": 1}' ]
  [[ "$output" == *"haloforge: engine time "*" ms"* ]]
  # one typed fact, the runner's time<TAB>NAME<TAB>MILLISECONDS, at least the engine's sleep
  [ "$(wc -l <"$T/bench.facts")" -eq 1 ]
  IFS=$'\t' read -r kind name ms <"$T/bench.facts"
  [ "$kind" = time ] && [ "$name" = engine ] && [[ $ms =~ ^[0-9]+$ ]] && ((ms >= 200))
  run lib 'bench_run "$HALOFORGE_RUN_DIR/out.jsonl" false'
  [ "$status" -eq 1 ]
  [[ "$output" == *"the benchmark failed (exit 1)"* ]]
}

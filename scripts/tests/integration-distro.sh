#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Proof of the llamacpp-distro track on real components (make integration-distro, as root):
#   - a Debian sid base image made with debootstrap (sid-image.sh, cached by recipe hash);
#   - a real distrobox of it (rootful podman through sudo: distrobox --root), made by
#     `haloforge build --track llamacpp-distro` run as the normal user haloforge-distro-it;
#   - the real packages from sid (llama.cpp-tools, libggml0-backend-vulkan, mesa-vulkan-drivers,
#     python3-gguf); no /dev/kfd here, so the backend choice must be Vulkan;
#   - the verify step writes a tiny random-weight model with python3-gguf and llama-bench runs
#     it on Vulkan, on Mesa's lavapipe (llvmpipe: a real Vulkan device on the CPU);
#     HALOFORGE_ALLOW_NO_GPU=1 lets the step accept llvmpipe and say so;
#   - the Go GGUF reader of steps/serve agrees with the file python3-gguf wrote;
#   - `haloforge bench --from` reads the real llama-bench JSON and finds no reference for
#     this device, and no memory bandwidth for its roofline (llvmpipe);
#   - `haloforge serve --track llamacpp-distro` on that tiny model: the fit against this
#     machine's memory, the exact command, the real llama-server in the box reaching ready
#     through its phases, /health and /v1/models, a streamed completion with its timings;
#     haloforge's own CPU time while the server idles (a figure); the user's Ctrl-C (SIGINT)
#     leaves no process of the test user and none in the box, and the port closed;
#   - `haloforge bench --track llamacpp-distro`: the real llama-bench in the box, its JSONL
#     parsed, "no reference for this hardware", and the time haloforge adds (a figure);
#   - the box is removed, no process of the test user is left.
# Runs from a copy in a world-readable temp dir (binary, scripts, versions.env), so a
# checkout in a 0700 directory works. HF_IT_KEEP=1 keeps the box; HALOFORGE_BIN picks the
# binary (default bin/haloforge, else go build); HF_IT_SCREENSHOT=DIR also takes the
# TUTORIAL's screenshots of the serve proof (serve-screenshot.sh, make screenshot-serve).

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# check, contains, need_root, install_packages and configure_podman are the therock
# integration test's (sourcing it defines its functions and runs nothing).
# shellcheck source=./integration.sh
. "$(dirname "${BASH_SOURCE[0]}")/integration.sh"
# shellcheck source=./sid-image.sh
. "$(dirname "${BASH_SOURCE[0]}")/sid-image.sh"
# shellcheck source=./serve-screenshot.sh
. "$(dirname "${BASH_SOURCE[0]}")/serve-screenshot.sh"

REPO=$(cd "$HF_LIB_DIR/../.." && pwd)
IT_USER=haloforge-distro-it
IT_BOX=haloforge-distro-it
IT_DIR=/var/tmp/haloforge-distro-it
STATE=/home/$IT_USER/.local/state/haloforge
SERVE_PORT=18573 # the proof's own port, on 127.0.0.1
START=$SECONDS
FAILS=0

make_user() {
  id "$IT_USER" >/dev/null 2>&1 || run useradd --create-home --shell /bin/bash "$IT_USER"
  printf '%s ALL=(ALL) NOPASSWD: ALL\n' "$IT_USER" | write_file "/etc/sudoers.d/$IT_USER"
  chmod 0440 "/etc/sudoers.d/$IT_USER"
  grep -q "^$IT_USER:" /etc/subuid || usermod --add-subuids 300000-365535 --add-subgids 300000-365535 "$IT_USER"
}

# stage: the binary, the scripts tree and versions.env in a world-readable directory.
stage() {
  local bin=${HALOFORGE_BIN:-$REPO/bin/haloforge}
  rm -rf "$IT_DIR"
  mkdir -p "$IT_DIR"
  if [[ ! -x $bin ]]; then
    bin=$IT_DIR/haloforge.build
    (cd "$REPO" && go build -o "$bin" ./cmd/haloforge) || die "go build ./cmd/haloforge failed"
  fi
  install -m 0755 "$bin" "$IT_DIR/haloforge"
  cp -r "$REPO/scripts" "$IT_DIR/scripts"
  install -m 0644 "$REPO/versions.env" "$IT_DIR/versions.env"
  chmod -R a+rX "$IT_DIR"
  install -m 0666 /dev/null "$IT_DIR/results.tsv"
}

# as_user CMD...: as the test user in its home, with the test options.
as_user() {
  sudo -u "$IT_USER" -H env -C "/home/$IT_USER" NO_COLOR=1 HALOFORGE_ALLOW_NO_GPU=1 \
    HALOFORGE_DISTROBOX_ROOT=1 HALOFORGE_RESULT_FILE="$IT_DIR/results.tsv" "$@"
}

remove_box() {
  as_user distrobox rm --root --force "$IT_BOX" >/dev/null 2>&1 || true
}

phase_build() {
  log_step "haloforge build --track llamacpp-distro (real distrobox, sid packages, lavapipe)"
  local out code=0 t0=$SECONDS
  out=$(as_user "$IT_DIR/haloforge" build --track llamacpp-distro --plain --ignore-checks \
    --scripts "$IT_DIR/scripts" --pins "$IT_DIR/versions.env" --state-dir "$STATE" \
    --set "LLAMACPP_DISTRO_IMAGE=$IMAGE" --set "LLAMACPP_DISTRO_BOX=$IT_BOX" 2>&1) || code=$?
  BUILD_SECS=$((SECONDS - t0))
  printf '%s\n' "$out" | tail -n 45
  check "build exits 0 (got $code, ${BUILD_SECS}s)" test "$code" -eq 0
  check "the box exists, created from $IMAGE" \
    test "$(podman container inspect --format '{{.Config.Image}}' "$IT_BOX" 2>/dev/null)" = "$IMAGE"
  check "the packages step chose Vulkan because there is no /dev/kfd" contains "$out" "backend: vulkan (no /dev/kfd in the box"
  check "the distribution's llama-server is on PATH in the box" contains "$out" "llama.cpp: version:"
  check "the verify step wrote the tiny model with python3-gguf" test -s "$STATE/llamacpp-distro/tiny-random.gguf"
  # The Go GGUF reader (steps/serve) against the file python3-gguf's own writer made in the box.
  if command -v go >/dev/null 2>&1; then
    check "steps/serve reads python3-gguf's file: 730624 bytes of weights, 2 layers, 2 KV heads" \
      env -C "$REPO" HALOFORGE_TINY_GGUF="$STATE/llamacpp-distro/tiny-random.gguf" \
      go test -count=1 -run '^TestReadGGUFFromPythonGGUF$' ./steps/serve
  fi
  check "llama-bench ran on the Vulkan device llvmpipe" contains "$out" "on Vulkan device Vulkan0 (llvmpipe"
  check "the step says llvmpipe is a CPU device (test mode)" contains "$out" "llvmpipe is a CPU Vulkan device"
  local results
  results=$(
    cat "$IT_DIR/results.tsv" 2>/dev/null
    find "$STATE/runs" -name '*result*' -type f -exec cat {} + 2>/dev/null
  )
  check "the verify protocol got a verified line" grep -qP '^verified\tllama\.cpp .* on Vulkan' <<<"$results"
  check "no not-verified line" bash -c "! grep -q '^not-verified' <<<\"\$1\"" _ "$results"
  BENCH_JSON=$STATE/llamacpp-distro/llama-bench.json
  check "llama-bench's JSON names the Vulkan backend" grep -q '"backends": "Vulkan"' "$BENCH_JSON"
}

phase_rerun() {
  log_step "A second build reuses the box and the packages"
  local out code=0 t0=$SECONDS
  out=$(as_user "$IT_DIR/haloforge" build --track llamacpp-distro --plain --ignore-checks \
    --scripts "$IT_DIR/scripts" --pins "$IT_DIR/versions.env" --state-dir "$STATE" \
    --set "LLAMACPP_DISTRO_IMAGE=$IMAGE" --set "LLAMACPP_DISTRO_BOX=$IT_BOX" --only toolbox,packages 2>&1) || code=$?
  check "re-run of toolbox,packages exits 0 (${code}, $((SECONDS - t0))s)" test "$code" -eq 0
  check "the box is reused" contains "$out" "box $IT_BOX exists with image"
  check "nothing is reinstalled" contains "$out" "already installed: llama.cpp-tools llama.cpp-tools-extra"
}

phase_bench() {
  log_step "haloforge bench --from the real llama-bench JSON"
  local out code=0
  out=$(as_user "$IT_DIR/haloforge" bench --from "$BENCH_JSON" 2>&1) || code=$?
  printf '%s\n' "$out"
  check "bench --from exits 0 ($code)" test "$code" -eq 0
  check "bench says there is no reference for this device" contains "$out" "no reference for this hardware"
  check "bench says llvmpipe's bandwidth is not known, instead of a roofline" \
    contains "$out" "roofline: no known memory bandwidth: llvmpipe"
  out=$(as_user "$IT_DIR/haloforge" bench --from "$BENCH_JSON" --json 2>&1) || code=$?
  check "bench --json has results with a null reference" grep -q '"reference": null' <<<"$out"
  check "bench --json has a null roofline share" grep -q '"roofline_pct": null' <<<"$out"
}

# need_curl: curl for the probes the test makes itself (not haloforge's).
need_curl() {
  command -v curl >/dev/null 2>&1 && return 0
  run env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends curl
}

# cpu_ticks PID: user + system CPU time of a process, in clock ticks.
cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }

# wait_for FILE PATTERN SECONDS PID: until FILE holds PATTERN, PID ends, or time runs out.
wait_for() {
  local file=$1 pattern=$2 secs=$3 pid=$4 i
  for ((i = 0; i < secs * 5; i++)); do
    grep -qE -- "$pattern" "$file" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}

# phases_are FILE LIST: the serve phases line mode printed, in order, are LIST (a,b,…).
phases_are() {
  [[ "$(grep -o 'phase [0-9]/[0-9] [a-z-]*' "$1" | awk '{ print $3 }' | paste -sd,)" == "$2" ]]
}

# has_rows TEXT TEST...: bench printed a line for each TEST.
has_rows() {
  local text=$1 t
  shift
  for t in "$@"; do
    grep -q "^$t " <<<"$text" || return 1
  done
}

# is_bench_json TEXT: TEXT is bench --json's object, with results and a verdict.
is_bench_json() {
  python3 -c 'import json, sys; d = json.load(sys.stdin); assert d["results"] and d["verdict"]' <<<"$1"
}

phase_serve() {
  log_step "haloforge serve --track llamacpp-distro (real llama-server in the box, lavapipe)"
  local model=$STATE/llamacpp-distro/tiny-random.gguf out=$IT_DIR/serve.out sudo_pid hf code=0 t0=$SECONDS
  as_user "$IT_DIR/haloforge" serve --track llamacpp-distro --model "$model" --port "$SERVE_PORT" \
    --scripts "$IT_DIR/scripts" --pins "$IT_DIR/versions.env" --state-dir "$STATE" \
    --set "LLAMACPP_DISTRO_BOX=$IT_BOX" >"$out" 2>&1 &
  sudo_pid=$!
  wait_for "$out" 'answered: first token|first request failed|^✗' 240 "$sudo_pid" || true
  SERVE_SECS=$((SECONDS - t0))
  hf=$(ps -o pid= --ppid "$sudo_pid" | tr -d ' ' | head -n1)
  cut -c1-200 "$out" | grep -v '^\[serve\] [0-9]' | head -n 40
  check "serve printed the fit against this machine" grep -q '^fit: fits: weights 713.5 KiB + KV cache' "$out"
  check "serve printed the exact command" grep -qF "command: llama-server -m $model --alias tiny-random.gguf --host 127.0.0.1 --port $SERVE_PORT" "$out"
  check "serve printed the environment: llvmpipe selected" grep -q '^env: GGML_VK_VISIBLE_DEVICES=0$' "$out"
  check "the phases came in order: starting, loading, model-loaded, health, models" \
    phases_are "$out" starting,loading,model-loaded,health,models
  check "serve reached ready (${SERVE_SECS}s to the first answer)" grep -q "ready at http://127.0.0.1:$SERVE_PORT in .*: tiny-random.gguf is served" "$out"
  # the first token in ms, or from 10 s on as a duration (13s, 1m05s) on a machine under load
  check "the first answer's speed says llvmpipe has no known bandwidth, instead of a roofline" \
    grep -q 'answered: .*; roofline: no known memory bandwidth: llvmpipe' "$out"
  check "a streamed completion answered, with its timings" grep -qE 'answered: first token after ([0-9]+ ms|[0-9hms]+), [0-9]+ tokens at [0-9.]+ tok/s \(engine: [0-9.]+ tok/s\)' "$out"
  check "the server answers /health while it is served" curl -sf -o /dev/null "http://127.0.0.1:$SERVE_PORT/health"
  # The rows under the ready line (the export and the curl), run as printed.
  sed -n '/^  OpenAI base URL: /,/^  serving: /p' "$out" | sed '1d;$d' >"$IT_DIR/usage.sh"
  # shellcheck disable=SC2016 # the inner bash expands them
  check "the printed export and curl run as printed: the real llama-server completes" \
    bash -c '. "$1" >"$1.out" && grep -q "\"choices\"" "$1.out" && [[ $OPENAI_BASE_URL == "$2" ]]' \
    usage "$IT_DIR/usage.sh" "http://127.0.0.1:$SERVE_PORT/v1"
  # haloforge's own CPU while the engine serves (idle here): under 1 % of a core.
  if [[ -n $hf ]] && [[ -r /proc/$hf/stat ]]; then
    local a b w=10
    a=$(cpu_ticks "$hf")
    sleep "$w"
    b=$(cpu_ticks "$hf")
    SERVE_CPU=$(awk -v d=$((b - a)) -v w="$w" 'BEGIN { printf "%.2f", d / (w * 100) * 100 }')
    check "haloforge uses under 1 % of a core while the server runs (${SERVE_CPU} % over ${w}s)" \
      awk -v c="$SERVE_CPU" 'BEGIN { exit !(c < 1) }'
  else
    check "the haloforge process was found" false
  fi
  # The user's Ctrl-C.
  [[ -n $hf ]] && kill -INT "$hf"
  wait "$sudo_pid" || code=$?
  check "serve exits 0 after the stop (got $code)" test "$code" -eq 0
  check "the step is recorded as served, with why" grep -q '^  why: ready in .*; stopped by you after' "$out"
  check "what it proved is recorded" grep -q '^  verified: /v1/completions answered: first token after' "$out"
  check "no process of $IT_USER is left" bash -c "! pgrep -u $IT_USER >/dev/null"
  check "no llama-server is left in the box" bash -c "! podman exec $IT_BOX pgrep -x llama-server >/dev/null"
  check "the port is closed" bash -c "! curl -sf -m 2 http://127.0.0.1:$SERVE_PORT/health >/dev/null"
  local report
  report=$(sed -n 's/^report: //p' "$out" | tail -n1)
  check "the run's report.json says succeeded" grep -q '"status": "succeeded"' "${report:-/nonexistent}"
}

phase_bench_track() {
  log_step "haloforge bench --track llamacpp-distro (real llama-bench in the box)"
  local out code=0 t0=$SECONDS
  out=$(as_user "$IT_DIR/haloforge" bench --track llamacpp-distro --scripts "$IT_DIR/scripts" --pins "$IT_DIR/versions.env" \
    --state-dir "$STATE" --set "LLAMACPP_DISTRO_BOX=$IT_BOX" 2>&1) || code=$?
  BENCH_SECS=$((SECONDS - t0))
  printf '%s\n' "$out" | grep -v '^\[bench\] {' | cut -c1-200 | tail -n 14
  check "bench --track exits 0 ($code, ${BENCH_SECS}s)" test "$code" -eq 0
  check "llama-bench ran with JSONL, 3 repetitions, flash attention, mmap off" \
    contains "$out" "-o jsonl -r 3 -fa 1 -ngl 999 -p 64 -n 16 -d 0 -dev Vulkan0 -lm none"
  check "its results were parsed: pp64 and tg16 rows" has_rows "$out" pp64 tg16
  check "bench says there is no reference for this device" contains "$out" "verdict: no reference for this hardware: it ran on llvmpipe"
  BENCH_ADDED=$(sed -n 's/.*haloforge and the box around it added \([0-9.]*\)s$/\1/p' <<<"$out")
  check "bench adds under 2 s to the engine's own time (${BENCH_ADDED:-?}s)" awk -v a="${BENCH_ADDED:-99}" 'BEGIN { exit !(a < 2) }'
  out=$(as_user "$IT_DIR/haloforge" bench --track llamacpp-distro --scripts "$IT_DIR/scripts" --pins "$IT_DIR/versions.env" \
    --state-dir "$STATE" --set "LLAMACPP_DISTRO_BOX=$IT_BOX" --json 2>/dev/null) || code=$?
  check "bench --track --json prints docs/json.md's JSON alone" is_bench_json "$out"
  # The tiny model's GGUF header: 730624 bytes of tensors less its 69120-byte token embedding
  # (it has its own output matrix) is what a generated token reads.
  check "bench --track read the model's GGUF header for the roofline (661504 bytes a token)" \
    grep -q '"read_bytes": 661504,' <<<"$out"
  check "no process of $IT_USER is left after bench" bash -c "! pgrep -u $IT_USER >/dev/null"
}

main() {
  need_root
  log_step "Setup (packages, podman config, sid image, test user, staged copy)"
  install_packages
  configure_podman
  IMAGE=$(sid_image) || die "could not build the sid image"
  make_user
  stage
  remove_box
  rm -rf "$STATE"
  SETUP_SECS=$((SECONDS - START))

  phase_build
  phase_rerun
  phase_bench
  need_curl
  phase_serve
  phase_bench_track
  if [[ -n ${HF_IT_SCREENSHOT:-} ]]; then
    serve_screenshot "$HF_IT_SCREENSHOT"
    check "no process of $IT_USER is left after the screenshot" bash -c "! pgrep -u $IT_USER >/dev/null"
  fi

  if [[ ${HF_IT_KEEP:-0} != 1 ]]; then
    remove_box
    check "the box is removed" bash -c "! podman container exists $IT_BOX"
    rm -rf "$IT_DIR"
  fi
  check "no process of $IT_USER is left" bash -c "! pgrep -u $IT_USER >/dev/null"
  log_info "timings: setup ${SETUP_SECS}s, build ${BUILD_SECS:-?}s, serve to the first answer ${SERVE_SECS:-?}s, bench --track ${BENCH_SECS:-?}s, total $((SECONDS - START))s"
  log_info "figures: haloforge's CPU while serving ${SERVE_CPU:-?} % of a core (under 1); bench added ${BENCH_ADDED:-?}s to the engine's time (under 2)"
  if ((FAILS)); then
    die "integration-distro: $FAILS check(s) failed in $((SECONDS - START))s"
  fi
  log_ok "integration-distro: every check passed in $((SECONDS - START))s"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi

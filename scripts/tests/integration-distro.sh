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
#     HALOFORGE_ALLOW_NO_GPU=1 lets the step accept llvmpipe and say so; then its answers:
#     the real haloforge verify (the runner's HALOFORGE_BIN, seen in the box) records a
#     reference from the same GGUF on llama.cpp's CPU backend, keeps it in the state dir, and
#     llama-server on Vulkan0 agrees with it: right;
#   - the Go GGUF reader of steps/serve agrees with the file python3-gguf wrote;
#   - `haloforge bench --from` reads the real llama-bench JSON and finds no reference for
#     this device, and no memory bandwidth for its roofline (llvmpipe);
#   - `haloforge serve --track llamacpp-distro` on another tiny model (seed 7, so no reference
#     is kept for it): the fit against this machine's memory, the exact command, the real
#     llama-server in the box reaching ready through its phases, /health and /v1/models, a
#     streamed completion with its timings and the roofline's absence on llvmpipe; the answers:
#     serve records a reference from the same GGUF on the CPU backend, in the box beside the
#     server, and says "answers right";
#     haloforge's own CPU time while the server idles (a figure); the user's Ctrl-C (SIGINT)
#     leaves no process of the test user and none in the box, and the port closed;
#   - `haloforge bench --track llamacpp-distro`: the real llama-bench in the box, its JSONL
#     parsed, "no reference for this hardware", and the time haloforge adds (a figure);
#   - a wrong stack made real: the tiny model with one layer's weights perturbed (test-model.sh:
#     same tokenizer and shapes), served for real by `haloforge serve --reference` the
#     original's CPU reference: WRONG OUTPUT with the evidence and the likely fix in line mode,
#     the step failed in report.json with its wrong-output family, exit 1 after the stop, and
#     `haloforge bench --track` then refuses to call the stack's speed normal;
#   - the box's image comes from a registry on 127.0.0.1 (Debian's docker-registry) holding an
#     image derived from the sid one, so that the build really pulls it: podman's layer bars
#     are in the step's log and haloforge records the image as pulled by it, the box as made
#     by it (owner label); `haloforge tracks` shows their disk, `runs` and `runs show` the run;
#   - `haloforge clean --track llamacpp-distro --dry-run` lists the box, the image and the
#     track's directory with their commands, `clean --yes` removes them, while a box and an
#     image the test made itself (not haloforge) stay, and the next plan runs every step;
#   - no process of the test user is left.
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
# shellcheck source=./test-model.sh
. "$(dirname "${BASH_SOURCE[0]}")/test-model.sh"

REPO=$(cd "$HF_LIB_DIR/../.." && pwd)
IT_USER=haloforge-distro-it
IT_BOX=haloforge-distro-it
IT_DIR=/var/tmp/haloforge-distro-it
STATE=/home/$IT_USER/.local/state/haloforge
SERVE_PORT=18573 # the proof's own port, on 127.0.0.1
# a box the test makes itself, not haloforge
IT_OTHER_BOX=haloforge-distro-it-theirs
IT_REG_DIR=/var/tmp/haloforge-distro-it-registry
IT_REG_CONF=/etc/containers/registries.conf.d/99-haloforge-distro-it.conf
IT_REG_PID=''
MODELS=/home/$IT_USER/models
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
  podman rm --force "$IT_OTHER_BOX" >/dev/null 2>&1 || true
}

# start_registry: Debian's docker-registry on 127.0.0.1 (a free port), known to podman as an
# insecure (http) registry by a drop-in that stop_registry removes; sets REG to host:port.
start_registry() {
  rm -rf "$IT_REG_DIR"
  mkdir -p "$IT_REG_DIR/data"
  printf 'version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: %s/data\nhttp:\n  addr: 127.0.0.1:0\n' \
    "$IT_REG_DIR" >"$IT_REG_DIR/config.yml"
  # Without the descriptors this script inherited (flock's, of the machine-wide lock): a
  # registry left behind must not keep the lock.
  (
    for fd in /proc/self/fd/*; do
      fd=${fd##*/}
      ((fd > 2)) && eval "exec $fd>&-"
    done
    exec docker-registry serve "$IT_REG_DIR/config.yml"
  ) >"$IT_REG_DIR/log" 2>&1 &
  IT_REG_PID=$!
  local i
  for ((i = 0; i < 100; i++)); do
    REG=$(grep -o 'listening on 127\.0\.0\.1:[0-9]*' "$IT_REG_DIR/log" | head -n1 | cut -d' ' -f3) && [[ -n $REG ]] && break
    sleep 0.1
  done
  [[ -n ${REG:-} ]] || die "docker-registry did not start: $(tail -n 5 "$IT_REG_DIR/log")"
  mkdir -p "$(dirname "$IT_REG_CONF")"
  printf '[[registry]]\nlocation = "%s"\ninsecure = true\n' "$REG" | write_file "$IT_REG_CONF"
}

stop_registry() {
  if [[ -n $IT_REG_PID ]]; then
    kill "$IT_REG_PID" 2>/dev/null || true
    wait "$IT_REG_PID" 2>/dev/null || true
    IT_REG_PID=''
  fi
  rm -f "$IT_REG_CONF"
  rm -rf "$IT_REG_DIR"
}

# registry_image SID: an image derived from SID (a label more: its own ID), pushed to the
# loopback registry and removed here, so that only the build's pull brings it back.
registry_image() {
  local sid=$1 ctx
  ctx=$(mktemp -d)
  printf 'FROM %s\nLABEL io.haloforge.test=integration-distro\n' "$sid" >"$ctx/Containerfile"
  podman build -q -t "$REG/haloforge-sid-it:1" "$ctx" >/dev/null || die "could not build the registry's image"
  rm -rf "$ctx"
  podman push -q --tls-verify=false "$REG/haloforge-sid-it:1" || die "could not push to $REG"
  podman rmi "$REG/haloforge-sid-it:1" >/dev/null
  printf '%s\n' "$REG/haloforge-sid-it:1"
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
  check "the box carries haloforge's owner label" \
    grep -qE '^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}\.[0-9a-f]{12}$' <<<"$(podman container inspect --format '{{index .Config.Labels "io.haloforge.owner"}}' "$IT_BOX" 2>/dev/null)"
  # shellcheck disable=SC2016 # $1 is the child shell's
  check "the toolbox step pulled the image in its pty: podman's bars are in its log" \
    bash -c 'grep -q "Copying config [0-9a-f]* \[=*\] [0-9.]*b / " "$1"/runs/*/toolbox.log' _ "$STATE"
  check "line mode listed what the track holds" contains "$out" "installed (haloforge clean --track llamacpp-distro"
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
  check "the answers on Vulkan0 agree with the CPU reference: right" \
    grep -qP '^verified\tanswers on Vulkan0: right: 6 prompts agree with the reference recorded on CPU by llama\.cpp b[0-9]+' <<<"$results"
  check "the step's haloforge verify recorded the reference from the CPU backend" contains "$out" "recorded: 6 prompts from"
  check "the reference is kept in the state dir, by the model's SHA-256" \
    bash -c "ls '$STATE'/verify/references/*.json | grep -qE '/[0-9a-f]{64}-[0-9a-f]{16}\.json$'"
  check "the verdict is kept as the track's last (what bench reads)" grep -q '"verdict": "right"' "$STATE/verify/last/llamacpp-distro.json"
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

# make_models: in the user's home, made in the box with its python3-gguf: seed7.gguf, the
# tiny model of another seed (no reference kept for it), and perturbed.gguf, the verify
# step's tiny model with one layer perturbed (test-model.sh).
make_models() {
  as_user mkdir -p "$MODELS"
  as_user distrobox enter --root "$IT_BOX" -- python3 "/run/host$IT_DIR/scripts/llamacpp-distro/tiny_model.py" "$MODELS/seed7.gguf" --seed 7 \
    && as_user distrobox enter --root "$IT_BOX" -- python3 "/run/host$IT_DIR/scripts/tests/gguf_scale.py" \
      "$STATE/llamacpp-distro/tiny-random.gguf" "$MODELS/perturbed.gguf" "${PERTURB[@]}"
}

phase_serve() {
  log_step "haloforge serve --track llamacpp-distro (real llama-server in the box, lavapipe)"
  local model=$MODELS/seed7.gguf out=$IT_DIR/serve.out sudo_pid hf code=0 t0=$SECONDS
  as_user "$IT_DIR/haloforge" serve --track llamacpp-distro --model "$model" --port "$SERVE_PORT" \
    --scripts "$IT_DIR/scripts" --pins "$IT_DIR/versions.env" --state-dir "$STATE" \
    --set "LLAMACPP_DISTRO_BOX=$IT_BOX" >"$out" 2>&1 &
  sudo_pid=$!
  wait_for "$out" 'answered: first token|first request failed|^✗' 240 "$sudo_pid" || true
  SERVE_SECS=$((SECONDS - t0))
  t0=$SECONDS
  wait_for "$out" 'answers right|WRONG OUTPUT|answers not|^✗' 300 "$sudo_pid" || true
  CHECK_SECS=$((SECONDS - t0))
  hf=$(ps -o pid= --ppid "$sudo_pid" | tr -d ' ' | head -n1)
  cut -c1-200 "$out" | grep -v '^\[serve\] [0-9]' | head -n 40
  check "serve printed the fit against this machine" grep -q '^fit: fits: weights 713.5 KiB + KV cache' "$out"
  check "serve printed the exact command (-ub 64 on lavapipe)" grep -qF "command: llama-server -m $model --alias seed7.gguf --host 127.0.0.1 --port $SERVE_PORT -ngl 999 -fa on -ub 64" "$out"
  check "serve printed the environment: llvmpipe selected" grep -q '^env: GGML_VK_VISIBLE_DEVICES=0$' "$out"
  check "the phases came in order: starting, loading, model-loaded, health, models" \
    phases_are "$out" starting,loading,model-loaded,health,models
  check "serve reached ready (${SERVE_SECS}s to the first answer)" grep -q "ready at http://127.0.0.1:$SERVE_PORT in .*: seed7.gguf is served" "$out"
  # the first token in ms, or from 10 s on as a duration (13s, 1m05s) on a machine under load
  check "the first answer's speed says llvmpipe has no known bandwidth, instead of a roofline" \
    grep -q 'answered: .*; roofline: no known memory bandwidth: llvmpipe' "$out"
  check "a streamed completion answered, with its timings" grep -qE 'answered: first token after ([0-9]+ ms|[0-9hms]+), [0-9]+ tokens at [0-9.]+ tok/s \(engine: [0-9.]+ tok/s\)' "$out"
  check "the server answers /health while it is served" curl -sf -o /dev/null "http://127.0.0.1:$SERVE_PORT/health"
  check "serve recorded a reference: the same GGUF on the CPU backend in the box" \
    grep -qE "recording a reference: the same model on the CPU backend, llama-server -m $model --alias seed7\.gguf --host 127\.0\.0\.1 --port [0-9]+ -ngl 0 --device none$" "$out"
  check "serve says the answers are right (${CHECK_SECS}s for the check)" \
    grep -qE '^✓ \[serve\] answers right: 6 prompts agree with the reference recorded on CPU by llama\.cpp b[0-9]+' "$out"
  check "and which check ran: haloforge's reference for this file, recorded now" \
    grep -qE "^  check: haloforge's reference for this model file, recorded on the CPU backend now \($STATE/verify/references/[0-9a-f]{64}-[0-9a-f]{16}\.json\)$" "$out"
  # (the box shares the host's processes: the pattern must not match this check's own line)
  check "the CPU server for the reference is gone" bash -c "! podman exec $IT_BOX pgrep -f -- '-ngl [0] --device none' >/dev/null"
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
  check "and that its answers are right" grep -q '^  verified: answers right: 6 prompts agree with the reference' "$out"
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

# phase_clean: what the build created is listed and removed, and only that.
phase_clean() {
  log_step "haloforge tracks, runs, clean --track llamacpp-distro (what haloforge made goes; a box and an image it did not make stay)"
  local out code=0 base
  base=$(podman image inspect --format '{{.Id}}' "$SID" 2>/dev/null)
  # a box and an image of the test's own, next to haloforge's
  podman create --name "$IT_OTHER_BOX" "$SID" true >/dev/null || die "could not make $IT_OTHER_BOX"
  podman tag "$SID" localhost/haloforge-distro-it-theirs:1
  out=$(as_user "$IT_DIR/haloforge" tracks --state-dir "$STATE" 2>&1) || code=$?
  printf '%s\n' "$out" | grep -A1 'last build:' | grep -B1 'disk:' || true
  check "tracks shows the track's disk: the box, the image, the data" \
    grep -qE "^  disk: .* in 3 items \(box $IT_BOX, image $IMAGE, data\)" <<<"$out"
  out=$(as_user "$IT_DIR/haloforge" runs --state-dir "$STATE" 2>&1) || code=$?
  printf '%s\n' "$out" | head -n 8
  check "runs lists the builds, servers and benchmarks" grep -qE '^[0-9a-f-]+ +llamacpp-distro +serve +succeeded' <<<"$out"
  out=$(as_user "$IT_DIR/haloforge" runs show last --state-dir "$STATE" 2>&1) || code=$?
  check "runs show last names the newest run" grep -qE '^run [0-9a-f-]+ · llamacpp-distro · bench' <<<"$out"
  out=$(as_user "$IT_DIR/haloforge" clean --track llamacpp-distro --dry-run --state-dir "$STATE" 2>&1) || code=$?
  printf '%s\n' "$out"
  check "clean --dry-run exits 0 ($code)" test "$code" -eq 0
  check "it lists the box with its command" grep -qF "sudo podman rm --force $IT_BOX" <<<"$out"
  check "it lists the pulled image with its command" grep -qF "sudo podman rmi $IMAGE" <<<"$out"
  check "it lists the track's directory" grep -qE "^  remove  data $STATE/llamacpp-distro · " <<<"$out"
  # shellcheck disable=SC2016 # $1 and $2 are the child shell's
  check "it lists nothing of the test's own" bash -c '! grep -qE "$1|theirs" <<<"$2"' _ "$IT_OTHER_BOX" "$out"
  check "the dry run removed nothing" podman container exists "$IT_BOX"
  code=0
  out=$(as_user "$IT_DIR/haloforge" clean --track llamacpp-distro --state-dir "$STATE" </dev/null 2>&1) || code=$?
  check "clean without a terminal or --yes is refused (exit 2, got $code)" test "$code" -eq 2
  code=0
  out=$(as_user "$IT_DIR/haloforge" clean --track llamacpp-distro --yes --state-dir "$STATE" 2>&1) || code=$?
  printf '%s\n' "$out" | tail -n 6
  check "clean --yes exits 0 ($code)" test "$code" -eq 0
  check "haloforge's box is gone" bash -c "! podman container exists $IT_BOX"
  check "the image haloforge pulled is gone" bash -c "! podman image exists $IMAGE"
  check "the track's directory is gone" test ! -e "$STATE/llamacpp-distro"
  check "the box haloforge did not make stays" podman container exists "$IT_OTHER_BOX"
  check "the image haloforge did not make stays" podman image exists localhost/haloforge-distro-it-theirs:1
  check "the sid image the test built stays, the same image" test "$(podman image inspect --format '{{.Id}}' "$SID" 2>/dev/null)" = "$base"
  out=$(as_user "$IT_DIR/haloforge" plan --track llamacpp-distro --scripts "$IT_DIR/scripts" --pins "$IT_DIR/versions.env" --state-dir "$STATE" 2>&1) || true
  check "the next build runs every step" test "$(grep -c 'what it built was removed (haloforge clean)' <<<"$out")" -eq 3
  podman rm --force "$IT_OTHER_BOX" >/dev/null
  podman rmi localhost/haloforge-distro-it-theirs:1 >/dev/null
}

# kept_reference MODEL: the file of haloforge's reference for MODEL, kept in the state dir.
kept_reference() {
  as_user "$IT_DIR/haloforge" verify --state-dir "$STATE" --reference-for "$1" --cached | sed -n 's/^kept: \(.*\) (recorded on .*/\1/p'
}

phase_serve_wrong() {
  log_step "a wrong stack: the tiny model with blk.1.ffn_down x1.3, served for real against the original's reference"
  local out=$IT_DIR/serve-wrong.out sudo_pid hf code=0 report
  REF_FILE=$(kept_reference "$STATE/llamacpp-distro/tiny-random.gguf")
  check "the verify step's reference is found by the model's hash" test -s "${REF_FILE:-/nonexistent}"
  as_user "$IT_DIR/haloforge" serve --track llamacpp-distro --model "$MODELS/perturbed.gguf" --port "$SERVE_PORT" \
    --reference "$REF_FILE" --scripts "$IT_DIR/scripts" --pins "$IT_DIR/versions.env" --state-dir "$STATE" \
    --set "LLAMACPP_DISTRO_BOX=$IT_BOX" >"$out" 2>&1 &
  sudo_pid=$!
  wait_for "$out" 'answers right|WRONG OUTPUT|answers not|^✗ \[serve\] first' 300 "$sudo_pid" || true
  sleep 0.5
  hf=$(ps -o pid= --ppid "$sudo_pid" | tr -d ' ' | head -n1)
  cut -c1-200 "$out" | grep -v '^\[serve\] [0-9]' | sed -n '/answered: first token/,$p' | head -n 16
  check "serve says WRONG OUTPUT, with the evidence: prompt, position, expected and got" \
    grep -qE '^✗ \[serve\] WRONG OUTPUT: prompt [0-9] \([a-z]+, ".*"\), position [0-9]+: expected ".*" \(logprob -?[0-9.e-]+\), got ".*" \(logprob -?[0-9.e-]+\): ' "$out"
  check "which check ran: the reference named, recorded on CPU" grep -qF "  check: the reference $REF_FILE (recorded on CPU)" "$out"
  check "the failure family is pinned" grep -q '^! \[serve\] wrong-output-perplexity: ' "$out"
  check "and the likely fix printed" grep -q '^  likely fix (wrong-output-perplexity, ' "$out"
  check "the server still serves until it is stopped" curl -sf -o /dev/null "http://127.0.0.1:$SERVE_PORT/health"
  [[ -n $hf ]] && kill -INT "$hf"
  wait "$sudo_pid" || code=$?
  check "serve exits 1 after the stop: it served wrong answers (got $code)" test "$code" -eq 1
  check "the step's verdict says why" grep -q '^  why: served, but its answers are wrong: WRONG OUTPUT: prompt ' "$out"
  report=$(sed -n 's/^report: //p' "$out" | tail -n1)
  check "report.json: the step failed, why WRONG OUTPUT, its family" python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["steps"][0]
assert s["status"] == "failed", s["status"]
assert s["why"].startswith("served, but its answers are wrong: WRONG OUTPUT: prompt "), s["why"]
assert [f["family"] for f in s["findings"]] == ["wrong-output-perplexity"], s["findings"]
' "${report:-/nonexistent}"
  check "the track's last verdict is wrong" grep -q '"verdict": "wrong"' "$STATE/verify/last/llamacpp-distro.json"
  check "no process of $IT_USER is left" bash -c "! pgrep -u $IT_USER >/dev/null"
  check "no llama-server is left in the box" bash -c "! podman exec $IT_BOX pgrep -x llama-server >/dev/null"
}

phase_bench_refuses() {
  log_step "haloforge bench --track after the wrong answers"
  local out code=0
  out=$(as_user "$IT_DIR/haloforge" bench --track llamacpp-distro --scripts "$IT_DIR/scripts" --pins "$IT_DIR/versions.env" \
    --state-dir "$STATE" --set "LLAMACPP_DISTRO_BOX=$IT_BOX" 2>&1) || code=$?
  grep 'not measured' <<<"$out" || true
  check "bench --track refuses to measure the wrong stack: exit 1 ($code)" test "$code" -eq 1
  check "and says why, and how to measure it anyway" \
    grep -qE 'not measured: its answers were wrong when serve last checked them \(.*\): WRONG OUTPUT: prompt .*add --despite-wrong-answers to measure it anyway' <<<"$out"
  check "no llama-bench ran" bash -c "! grep -q 'llama-bench' <<<\"\$1\"" _ "$out"
  code=0
  out=$(as_user "$IT_DIR/haloforge" bench --track llamacpp-distro --scripts "$IT_DIR/scripts" --pins "$IT_DIR/versions.env" \
    --state-dir "$STATE" --set "LLAMACPP_DISTRO_BOX=$IT_BOX" --despite-wrong-answers --report "/home/$IT_USER/wrong-bench.md" 2>&1) || code=$?
  grep '^verdict:' <<<"$out" | cut -c1-200 || true
  check "bench --track --despite-wrong-answers measures it: exit 0 ($code)" test "$code" -eq 0
  check "and refuses to call the speed normal, and says why" \
    grep -qE '^verdict: not normal, whatever the figures: its answers were wrong when serve last checked them \(.*\): WRONG OUTPUT: prompt ' <<<"$out"
  check "its report.json carries the wrong answers" python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))["comparison"]["answers"]
assert a["verdict"] == "wrong" and a["by"] == "serve" and a["line"].startswith("WRONG OUTPUT: prompt "), a
' "/home/$IT_USER/wrong-bench.json"
}

main() {
  need_root
  log_step "Setup (packages, podman config, sid image, test user, staged copy)"
  install_packages
  configure_podman
  SID=$(sid_image) || die "could not build the sid image"
  trap stop_registry EXIT
  start_registry
  IMAGE=$(registry_image "$SID")
  make_user
  stage
  remove_box
  rm -rf "$STATE"
  SETUP_SECS=$((SECONDS - START))

  phase_build
  phase_rerun
  phase_bench
  need_curl
  make_models || die "the test models were not written"
  phase_serve
  phase_bench_track
  phase_serve_wrong
  phase_bench_refuses
  if [[ -n ${HF_IT_SCREENSHOT:-} ]]; then
    serve_screenshot "$HF_IT_SCREENSHOT"
    check "no process of $IT_USER is left after the screenshot" bash -c "! pgrep -u $IT_USER >/dev/null"
  fi
  if [[ ${HF_IT_KEEP:-0} != 1 ]]; then
    phase_clean
  fi

  if [[ ${HF_IT_KEEP:-0} != 1 ]]; then
    remove_box
    check "the box is removed" bash -c "! podman container exists $IT_BOX"
    rm -rf "$IT_DIR"
  fi
  check "no process of $IT_USER is left" bash -c "! pgrep -u $IT_USER >/dev/null"
  log_info "timings: setup ${SETUP_SECS}s, build ${BUILD_SECS:-?}s, serve to the first answer ${SERVE_SECS:-?}s, its answers checked (a CPU reference recorded) in ${CHECK_SECS:-?}s more, bench --track ${BENCH_SECS:-?}s, total $((SECONDS - START))s"
  log_info "figures: haloforge's CPU while serving ${SERVE_CPU:-?} % of a core (under 1); bench added ${BENCH_ADDED:-?}s to the engine's time (under 2)"
  if ((FAILS)); then
    die "integration-distro: $FAILS check(s) failed in $((SECONDS - START))s"
  fi
  log_ok "integration-distro: every check passed in $((SECONDS - START))s"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi

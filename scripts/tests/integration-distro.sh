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
#     this device;
#   - the box is removed, no process of the test user is left.
# Runs from a copy in a world-readable temp dir (binary, scripts, versions.env), so a
# checkout in a 0700 directory works. HF_IT_KEEP=1 keeps the box; HALOFORGE_BIN picks the
# binary (default bin/haloforge, else go build).

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# check, contains, need_root, install_packages and configure_podman are the therock
# integration test's (sourcing it defines its functions and runs nothing).
# shellcheck source=./integration.sh
. "$(dirname "${BASH_SOURCE[0]}")/integration.sh"
# shellcheck source=./sid-image.sh
. "$(dirname "${BASH_SOURCE[0]}")/sid-image.sh"

REPO=$(cd "$HF_LIB_DIR/../.." && pwd)
IT_USER=haloforge-distro-it
IT_BOX=haloforge-distro-it
IT_DIR=/var/tmp/haloforge-distro-it
STATE=/home/$IT_USER/.local/state/haloforge
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
  check "llama-bench ran on the Vulkan device llvmpipe" contains "$out" "on Vulkan (llvmpipe"
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
  out=$(as_user "$IT_DIR/haloforge" bench --from "$BENCH_JSON" --json 2>&1) || code=$?
  check "bench --json has results with a null reference" grep -q '"reference": null' <<<"$out"
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

  if [[ ${HF_IT_KEEP:-0} != 1 ]]; then
    remove_box
    check "the box is removed" bash -c "! podman container exists $IT_BOX"
    rm -rf "$IT_DIR"
  fi
  check "no process of $IT_USER is left" bash -c "! pgrep -u $IT_USER >/dev/null"
  log_info "timings: setup ${SETUP_SECS}s, build ${BUILD_SECS:-?}s, total $((SECONDS - START))s"
  if ((FAILS)); then
    die "integration-distro: $FAILS check(s) failed in $((SECONDS - START))s"
  fi
  log_ok "integration-distro: every check passed in $((SECONDS - START))s"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi

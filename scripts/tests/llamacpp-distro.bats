#!/usr/bin/env bats
# Tests of the llamacpp-distro track: the helpers (KFD topology to gfx names, the HIP
# backend's code objects), the backend choice, and the verify step with a stand-in
# llama-bench (no GPU here) that prints REAL llama-bench JSON captured from Debian sid's
# package on lavapipe (testdata/llama-bench-lavapipe.json). The real run is in
# integration-distro.sh.
# shellcheck disable=SC2016

load answers_standin

setup() {
  S=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
  D=$BATS_TEST_DIRNAME/testdata
  T=$BATS_TEST_TMPDIR
  export NO_COLOR=1 HALOFORGE_STATE_DIR=$T/state HALOFORGE_RUN_DIR=$T/state/runs/r1
  export HALOFORGE_RESULT_FILE=$T/results.tsv HALOFORGE_IN_BOX=1 LLAMACPP_DISTRO_BOX=hf-bats-box
  unset HALOFORGE_DRY_RUN LLAMA_MODEL HALOFORGE_ALLOW_NO_GPU GGML_VK_VISIBLE_DEVICES LLAMACPP_DISTRO_BACKEND
  : >"$HALOFORGE_RESULT_FILE"
}

node() { # node DIR simd_count gfx_target_version
  mkdir -p "$1"
  printf 'cpu_cores_count 0\nsimd_count %s\ngfx_target_version %s\n' "$2" "$3" >"$1/properties"
}

@test "gpu_gfx_targets names GPU nodes from the KFD topology and skips CPU nodes" {
  node "$T/topo/0" 0 0
  node "$T/topo/1" 80 110501
  node "$T/topo/2" 208 90010
  node "$T/topo/3" 40 110501
  run bash -c ". '$S/lib/common.sh'; . '$S/llamacpp-distro/lib.sh'; HALOFORGE_KFD_TOPOLOGY='$T/topo' gpu_gfx_targets"
  [ "$status" -eq 0 ]
  [ "$output" = "$(printf 'gfx1151\ngfx90a')" ]
}

@test "gpu_gfx_targets prints nothing without a KFD topology" {
  run bash -c ". '$S/lib/common.sh'; . '$S/llamacpp-distro/lib.sh'; HALOFORGE_KFD_TOPOLOGY='$T/none' gpu_gfx_targets"
  [ "$status" -eq 0 ]
  [ -z "$output" ]
}

@test "the HIP backend's offload bundle names its targets; gfx1151 is found only when built" {
  printf 'junk\0__CLANG_OFFLOAD_BUNDLE__hipv4-amdgcn-amd-amdhsa--gfx1100\0x hipv4-amdgcn-amd-amdhsa--gfx90a\0' >"$T/libggml-hip.so"
  lib() { bash -c ". '$S/lib/common.sh'; . '$S/llamacpp-distro/lib.sh'; $1"; }
  run lib "hip_backend_targets '$T/libggml-hip.so'"
  [ "$output" = "gfx1100 gfx90a" ]
  run lib "hip_backend_has '$T/libggml-hip.so' gfx1100"
  [ "$status" -eq 0 ]
  run lib "hip_backend_has '$T/libggml-hip.so' gfx1151"
  [ "$status" -eq 1 ]
  run lib "hip_backend_has '$T/missing.so' gfx1100"
  [ "$status" -eq 1 ]
}

@test "the local verify protocol writes one line per result, tabs and newlines flattened" {
  bash -c ". '$S/lib/common.sh'; . '$S/llamacpp-distro/lib.sh'; hf_verified \"\$(printf 'a\tb\nc')\"; hf_not_verified why" >/dev/null 2>&1
  [ "$(cat "$HALOFORGE_RESULT_FILE")" = "$(printf 'verified\ta b c\nnot-verified\twhy')" ]
}

@test "packages: an unknown LLAMACPP_DISTRO_BACKEND is bad input (exit 2), nothing installed" {
  run env LLAMACPP_DISTRO_BACKEND=rocm bash "$S/llamacpp-distro/01-install-packages.sh"
  [ "$status" -eq 2 ]
  [[ "$output" == *"LLAMACPP_DISTRO_BACKEND=rocm: want auto, vulkan or hip"* ]]
  [[ "$output" != *apt-get* ]]
}

@test "packages (dry run): no /dev/kfd means Vulkan, with the reason, and the exact apt commands" {
  [ ! -e /dev/kfd ] || skip "this machine has /dev/kfd"
  run env HALOFORGE_DRY_RUN=1 bash "$S/llamacpp-distro/01-install-packages.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"apt-get install -y -q --no-install-recommends llama.cpp-tools llama.cpp-tools-extra"* ]]
  [[ "$output" == *"libggml0-backend-vulkan mesa-vulkan-drivers"* ]]
  [[ "$output" != *libggml0-backend-hip* ]]
  [[ "$output" == *"candidate: vulkan (no /dev/kfd in the box"* ]]
  [[ "$output" == *"backend=vulkan"* ]]
}

@test "packages: forcing hip without /dev/kfd stops with the reason" {
  [ ! -e /dev/kfd ] || skip "this machine has /dev/kfd"
  run env LLAMACPP_DISTRO_BACKEND=hip bash "$S/llamacpp-distro/01-install-packages.sh"
  [ "$status" -eq 1 ]
  [[ "$output" != *apt-get* ]]
  [[ "$output" == *"LLAMACPP_DISTRO_BACKEND=hip, but no /dev/kfd in the box"* ]]
}

# stand_in_bench [JSON]: a stand-in llama-bench (no GPU here) that lists one llvmpipe Vulkan
# device only when GGML_VK_VISIBLE_DEVICES is set, as the real one does, and prints JSON
# (real, captured without -dev) with "devices" set to the -dev it was given, as the real one
# writes it.
stand_in_bench() {
  local json=${1:-$D/llama-bench-lavapipe.json}
  mkdir -p "$T/bin"
  cat >"$T/bin/llama-bench" <<FAKE
#!/usr/bin/env bash
printf '%s\n' "\$*" >>"$T/calls"
case "\$*" in
--list-devices)
  echo 'Available devices:'
  if [[ -n "\${GGML_VK_VISIBLE_DEVICES:-}" ]]; then echo '  Vulkan0: llvmpipe (LLVM 22.1.8, 256 bits) (24105 MiB, 23614 MiB free)'; else echo '  (none)'; fi ;;
--help) echo '  -lm, --load-mode <auto|none|mmap|mlock|mmap+mlock|dio> (default: auto)' ;;
*) echo 'ggml_vulkan: Warning: Device type is CPU.' >&2
  dev=auto prev=''
  for a in "\$@"; do [[ \$prev == -dev ]] && dev=\$a; prev=\$a; done
  sed "s/\"devices\": \"auto\"/\"devices\": \"\$dev\"/" "$json" ;;
esac
FAKE
  chmod +x "$T/bin/llama-bench"
  export PATH=$T/bin:$PATH
  mkdir -p "$HALOFORGE_STATE_DIR/llamacpp-distro"
  printf 'backend=vulkan\ngfx=\nreason=test\n' >"$HALOFORGE_STATE_DIR/llamacpp-distro/backend"
  printf 'GGUF' >"$T/model.gguf"
  export LLAMA_MODEL=$T/model.gguf
}

@test "verify: llvmpipe only counts in test mode, and the result says what ran" {
  stand_in_bench
  run env HALOFORGE_ALLOW_NO_GPU=1 bash "$S/llamacpp-distro/02-verify.sh"
  [ "$status" -eq 0 ]
  grep -q -- '-o json -r 3 -fa 1 -lm none -ngl 999 -dev Vulkan0 -p 512 -n 128' "$T/calls"
  run cat "$HALOFORGE_RESULT_FILE"
  [[ "$output" == "$(printf 'verified\t')llama.cpp Debian (build 11669) on Vulkan device Vulkan0 (llvmpipe (LLVM 22.1.8, 256 bits)): pp64: 2756.6 t/s, tg16: 407.8 t/s, pp64 @ d256: 2291.0 t/s, tg16 @ d256: 454.2 t/s; llvmpipe is a CPU Vulkan device"* ]]
  [ "$(grep -c '"devices": "Vulkan0"' "$HALOFORGE_STATE_DIR/llamacpp-distro/llama-bench.json")" -eq 4 ]
}

@test "verify: without test mode, llvmpipe is not a GPU: not verified, exit 1" {
  stand_in_bench
  export GGML_VK_VISIBLE_DEVICES=0
  run bash "$S/llamacpp-distro/02-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$(cat "$HALOFORGE_RESULT_FILE")" == "$(printf 'not-verified\t')Vulkan ran on llvmpipe, Mesa's CPU device, not on a GPU"* ]]
}

@test "verify: a run that fell back to the CPU backend is not verified" {
  sed 's/"backends": "Vulkan"/"backends": "CPU"/' "$D/llama-bench-lavapipe.json" >"$T/cpu.json"
  stand_in_bench "$T/cpu.json"
  run env HALOFORGE_ALLOW_NO_GPU=1 bash "$S/llamacpp-distro/02-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$(cat "$HALOFORGE_RESULT_FILE")" == "$(printf 'not-verified\t')llama-bench ran with backends 'CPU', not Vulkan"* ]]
}

@test "verify: no Vulkan device at all is not verified, and says where to look" {
  stand_in_bench
  run bash "$S/llamacpp-distro/02-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$(cat "$HALOFORGE_RESULT_FILE")" == *"llama-bench sees no Vulkan device"* ]]
}

@test "verify: before the packages step, says to run it" {
  run bash "$S/llamacpp-distro/02-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$(cat "$HALOFORGE_RESULT_FILE")" == *"run the packages step first"* ]]
}

@test "verify: a missing LLAMA_MODEL is named" {
  stand_in_bench
  run env LLAMA_MODEL="$T/nope.gguf" bash "$S/llamacpp-distro/02-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *"LLAMA_MODEL=$T/nope.gguf: no such file"* ]]
}

@test "toolbox (dry run): the distrobox create command with the pinned image" {
  run env -u HALOFORGE_IN_BOX HALOFORGE_DRY_RUN=1 HALOFORGE_ALLOW_NO_GPU=1 \
    LLAMACPP_DISTRO_IMAGE=docker.io/library/debian:sid bash "$S/llamacpp-distro/00-setup-box.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"distrobox create --yes --name hf-bats-box --image docker.io/library/debian:sid"* ]]
}

# host_devs DEV...: a directory standing in for the host's root with these device nodes (plain
# files: only their presence is read, HALOFORGE_DEV_ROOT), as a box step checks them.
host_devs() {
  local d
  for d in "$@"; do
    mkdir -p "$T/hostroot$(dirname "$d")"
    : >"$T/hostroot$d"
  done
  export HALOFORGE_DEV_ROOT=$T/hostroot
}

# box_dry: 00-setup-box.sh's dry run on the host (not in a box).
box_dry() {
  env -u HALOFORGE_IN_BOX HALOFORGE_DRY_RUN=1 LLAMACPP_DISTRO_IMAGE=docker.io/library/debian:sid "$@" bash "$S/llamacpp-distro/00-setup-box.sh"
}

@test "BREAKS N3: toolbox on a docker manager: the host's numeric groups, never podman's keep-groups" {
  host_devs /dev/dri /dev/kfd
  mkdir -p "$T/bin"
  printf '#!/bin/sh\n# stand-in: a podman that is not usable here\nexit 1\n' >"$T/bin/podman"
  chmod +x "$T/bin/podman"
  run box_dry DBX_CONTAINER_MANAGER=docker PATH="$T/bin:$PATH"
  [ "$status" -eq 0 ]
  create=$(grep '^\[dry-run\] distrobox create' <<<"$output")
  [[ "$create" == *"--device /dev/dri --device /dev/kfd"* ]]
  [[ "$create" != *keep-groups* ]]
  [[ "$create" == *"--security-opt seccomp=unconfined"* ]]
  gid=$(getent group video | cut -d: -f3)
  [ -z "$gid" ] || [[ "$create" == *"--group-add $gid"* ]]
}

@test "toolbox under podman: keep-groups, and Vulkan alone gets no seccomp change" {
  host_devs /dev/dri
  run box_dry DBX_CONTAINER_MANAGER=podman
  [ "$status" -eq 0 ]
  [[ "$output" == *"--additional-flags '--device /dev/dri --group-add keep-groups'"* ]]
}

@test "BREAKS N4: a rootful box gets passwordless sudo, so 01's apt runs unattended" {
  host_devs /dev/dri
  run box_dry HALOFORGE_DISTROBOX_ROOT=1
  [ "$status" -eq 0 ]
  [[ "$output" == *"distrobox create --root --yes --name hf-bats-box"* ]]
  [[ "$output" == *"exec --user root hf-bats-box sh -c"*"NOPASSWD:ALL"*"/etc/sudoers.d/haloforge"* ]]
  run box_dry HALOFORGE_DISTROBOX_ROOT=0
  [[ "$output" != *"sudoers.d/haloforge"* ]]
}

@test "verify: the answers on the device against the CPU reference, recorded once and kept" {
  stand_in_bench
  stand_in_answers
  run env HALOFORGE_ALLOW_NO_GPU=1 bash "$S/llamacpp-distro/02-verify.sh"
  [ "$status" -eq 0 ]
  # the reference: the same GGUF on the CPU backend; then the server under test on Vulkan0,
  # without mmap, and with -ub 64 on lavapipe (test mode)
  [ "$(sed -n 1p "$T/server-calls")" = "-m $T/model.gguf -ngl 0 --device none --host 127.0.0.1 --port $(sed -n 's/.*--port //p' "$T/server-calls" | head -n1)" ]
  [[ "$(sed -n 2p "$T/server-calls")" == "-m $T/model.gguf -ngl 999 -fa on --device Vulkan0 --no-mmap -ub 64 --host 127.0.0.1 --port "* ]]
  grep -q -- "--record-for $T/model.gguf --backend CPU" "$T/hf-calls"
  grep -q -- "--reference-for $T/model.gguf --track llamacpp-distro" "$T/hf-calls"
  grep -q -- "--state-dir $HALOFORGE_STATE_DIR" "$T/hf-calls"
  run grep '^verified' "$HALOFORGE_RESULT_FILE"
  [[ "$output" == *"$(printf 'verified\t')answers on Vulkan0: right: 6 prompts agree with the reference recorded on CPU by llama.cpp b11669"* ]]
  # no server is left running
  [ -z "$(pgrep -f "$T/bin/llama-server" || true)" ]
  # a second run finds the reference kept: no CPU server, no recording
  : >"$T/server-calls"
  : >"$HALOFORGE_RESULT_FILE"
  run env HALOFORGE_ALLOW_NO_GPU=1 bash "$S/llamacpp-distro/02-verify.sh"
  [ "$status" -eq 0 ]
  [ "$(wc -l <"$T/server-calls")" -eq 1 ]
  [ "$(grep -c -- --record-for "$T/hf-calls")" -eq 1 ]
  [[ "$output" == *"haloforge's reference for this GGUF is kept: no CPU server needed"* ]]
}

@test "verify: WRONG OUTPUT fails the step, the evidence in the log and the result" {
  stand_in_bench
  stand_in_answers
  run env HALOFORGE_ALLOW_NO_GPU=1 FX_ANSWERS=wrong bash "$S/llamacpp-distro/02-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *'WRONG OUTPUT: prompt 1 (capital, "The capital of France is"), position 0: expected " Paris"'* ]]
  run grep '^not-verified' "$HALOFORGE_RESULT_FILE"
  [[ "$output" == "$(printf 'not-verified\t')answers on Vulkan0: WRONG OUTPUT: prompt 1 "* ]]
  [ -z "$(pgrep -f "$T/bin/llama-server" || true)" ]
}

@test "verify: without a haloforge binary the answers are not verified, and it says why" {
  stand_in_bench
  stand_in_answers
  run env HALOFORGE_ALLOW_NO_GPU=1 HALOFORGE_BIN= bash "$S/llamacpp-distro/02-verify.sh"
  [ "$status" -eq 0 ]
  run cat "$HALOFORGE_RESULT_FILE"
  [[ "$output" == *"$(printf 'not-verified\t')answers on Vulkan0: answers not checked: no haloforge binary to check them with"* ]]
  [ ! -e "$T/server-calls" ]
}

@test "verify (dry run): the answers check's commands are printed, nothing runs" {
  stand_in_answers
  run env HALOFORGE_DRY_RUN=1 bash "$S/llamacpp-distro/02-verify.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"verify --reference-for $T/model.gguf --cached"* || "$output" == *"verify --reference-for"*"--cached"* ]]
  [[ "$output" == *"llama-server -m "*" -ngl 0 --device none --host 127.0.0.1 --port PORT"* ]]
  [[ "$output" == *"--record-for "*" --backend CPU"* ]]
  [ ! -e "$T/server-calls" ]
}

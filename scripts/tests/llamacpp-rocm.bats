#!/usr/bin/env bats
# Tests of the llamacpp-rocm ladder (scripts/llamacpp-rocm). There is no GPU and no registry
# here, so the container engine is a stand-in (fake_engine below) that plays a scripted
# outcome per rung: a hang after llama.cpp's real hang-prone line, a crash, llama-bench's
# real output for a missing -dev device, a real CPU-only run (Debian sid's Vulkan build with
# no device: testdata/llama-bench-cpu-only*, "Vulkan" read as "ROCm"), or a GPU run (the real
# lavapipe JSONL rows with ROCm0 and the 8060S standing in for the GPU). Everything else
# (the ladder data, the stall watch with real timing, the records) is the real code.
# shellcheck disable=SC2016,SC2030,SC2031

setup() {
  S=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
  T=$BATS_TEST_TMPDIR
  export NO_COLOR=1 HALOFORGE_STATE_DIR=$T/state HALOFORGE_RUN_DIR=$T/state/runs/r1
  export HALOFORGE_CACHE_DIR=$T/state/cache/llamacpp-rocm HALOFORGE_ALLOW_NO_GPU=1
  export LLAMA_STALL_TIMEOUT=1 LLAMA_MODEL=$T/models/tiny.gguf
  export HALOFORGE_RESULT_FILE=$T/results.tsv
  unset HALOFORGE_DRY_RUN
  mkdir -p "$T/models" "$T/bin" "$T/outcome"
  : >"$LLAMA_MODEL"
  fake_engine
  export HALOFORGE_CONTAINER_ENGINE=$T/bin/podman
}

# fake_engine: $T/bin/podman plays $T/outcome/<rung id> (hang, crash, bench; default hang)
# for `run --name haloforge-ladder-<id> …` and logs every call to $T/calls.
fake_engine() {
  cat >"$T/bin/podman" <<FAKE
#!/usr/bin/env bash
# stand-in podman for the bats tests
D=$BATS_TEST_DIRNAME/testdata
FAKE
  cat >>"$T/bin/podman" <<'FAKE'
printf '%s\n' "$*" >>"$(dirname "$0")/../calls"
all=" $* "
[[ $1 == run ]] || exit 0
name=''
while (($#)); do [[ $1 == --name ]] && name=$2; shift; done
outcome=$(cat "$(dirname "$0")/../outcome/${name#haloforge-ladder-}" 2>/dev/null || echo hang)
case $outcome in
crash)
  echo "ggml_cuda_init: found 1 ROCm devices:"
  echo "Illegal instruction (core dumped)"
  exit 132 ;;
cpubench)
  # real: a build whose GPU backend found no device still names it in backends
  if [[ $all == *" -o jsonl "* ]]; then
    sed 's/Vulkan/ROCm/g' "$D/llama-bench-cpu-only-v.log"
  else
    sed 's/Vulkan/ROCm/g' "$D/llama-bench-cpu-only.md"
  fi
  exit 0 ;;
nodev)
  sed 's/Vulkan/ROCm/g' "$D/llama-bench-dev-missing.txt"
  exit 1 ;;
bench)
  echo "ggml_cuda_init: found 1 ROCm devices:"
  echo "load_all_data: using async uploads for device ROCm0"
  echo "load_tensors: offloaded 17/17 layers to GPU"
  echo "graph_reserve: reserving a graph for ubatch with n_tokens = 64"
  grep '^{' "$D/llama-bench-lavapipe-v.log" | sed -e 's/Vulkan/ROCm/g' -e 's/llvmpipe (LLVM 22.1.8, 256 bits)/AMD Radeon Graphics/'
  exit 0 ;;
*)
  echo "load_all_data: using async uploads for device ROCm0"
  echo "graph_reserve: reserving a graph for ubatch with n_tokens = 64"
  exec sleep 30 ;;
esac
FAKE
  chmod +x "$T/bin/podman"
}

lib() { bash -c ". \"$S/lib/common.sh\"; . \"$S/lib/container.sh\"; . \"$S/llamacpp-rocm/ladder.sh\"; $1"; }

@test "the ladder is data: four rungs in the investigation's order, each naming a real pin" {
  run lib "ladder_rungs '$S/llamacpp-rocm/ladder.tsv' | cut -f1"
  [ "$status" -eq 0 ]
  # no-rocwmma is gone: its image has no llama-bench and is built with rocWMMA; N8:
  # gfx1100-override is gone: kyuz0's images carry gfx1151 kernels only.
  [ "$output" = "$(printf '%s\n' sdma-off flash-attn-off cwsr-off therock-nightly)" ]
  run lib "ladder_rungs '$S/llamacpp-rocm/ladder.tsv' | cut -f2 | sort -u"
  for pin in $output; do grep -q "^$pin=" "$S/../versions.env"; done
  run lib "ladder_rungs '$S/llamacpp-rocm/ladder.tsv' | awk -F '\t' '\$1 == \"sdma-off\" { print \$3 }'"
  [[ "$output" == *HSA_ENABLE_SDMA=0* ]]
}

@test "a malformed ladder line is refused with its line number" {
  printf 'ok\tLLAMACPP_ROCM_IMAGE\t-\t-\t-\twhy\nbroken\tonly-two\n' >"$T/l.tsv"
  run lib "ladder_rungs '$T/l.tsv'"
  [ "$status" -ne 0 ]
  [[ "$output" == *"l.tsv:2: want 6 tab-separated fields, got 2"* ]]
}

@test "stall_watch passes a healthy run through, marker lines included" {
  run lib "printf 'load_all_data: using async uploads for device ROCm0\nall good\n' | stall_watch 1 '$T/log'"
  [ "$status" -eq 0 ]
  [ "$(cat "$T/log")" = "$(printf 'load_all_data: using async uploads for device ROCm0\nall good')" ]
}

@test "stall_watch calls silence after graph_reserve a hang at that line, within the timeout" {
  run lib "{ echo 'llama_context: constructing'; echo 'graph_reserve: reserving a graph for ubatch with n_tokens = 512'; sleep 4; } | { s=\$SECONDS rc=0; stall_watch 1 '$T/log' || rc=\$?; echo \"rc=\$rc \$STALL_REASON took=\$((SECONDS - s))\"; }"
  [[ "$output" == *"rc=3 hung at graph_reserve: reserving a graph for ubatch (no output for 1s) took="[12]* ]]
}

@test "stall_watch allows three times the timeout before any marker" {
  run lib "{ echo loading; sleep 2; echo loaded; } | { rc=0; stall_watch 1 '$T/log' || rc=\$?; echo \"rc=\$rc\"; }"
  [[ "$output" == *"loaded"*"rc=0"* ]]
}

@test "the cwsr rung needs a host change: it is skipped with the exact command, never applied" {
  mkdir -p "$T/sys/sys/module/amdgpu/parameters"
  echo 1 >"$T/sys/sys/module/amdgpu/parameters/cwsr_enable"
  run lib "HALOFORGE_SYSFS_ROOT='$T/sys' host_check_ok /sys/module/amdgpu/parameters/cwsr_enable=0 || echo \"differs, host has \$(HALOFORGE_SYSFS_ROOT='$T/sys' host_check_ok /sys/module/amdgpu/parameters/cwsr_enable=0 || true)\""
  [ "$output" = "1
differs, host has 1" ]
  echo 0 >"$T/sys/sys/module/amdgpu/parameters/cwsr_enable"
  run lib "HALOFORGE_SYSFS_ROOT='$T/sys' host_check_ok /sys/module/amdgpu/parameters/cwsr_enable=0"
  [ "$status" -eq 0 ]
  run lib "host_change_hint /sys/module/amdgpu/parameters/cwsr_enable=0"
  [[ "$output" == *"amdgpu.cwsr_enable=0"*reboot* ]]
}

@test "the ladder records a hang and a crash, stops at the first rung that generates on the GPU" {
  echo crash >"$T/outcome/sdma-off"
  echo bench >"$T/outcome/cwsr-off"
  export HALOFORGE_SYSFS_ROOT=$T/sys
  mkdir -p "$T/sys/sys/module/amdgpu/parameters"
  echo 0 >"$T/sys/sys/module/amdgpu/parameters/cwsr_enable"
  run bash "$S/llamacpp-rocm/01-run-ladder.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"sdma-off: failed: exit 132: Illegal instruction (core dumped)"* ]]
  [[ "$output" == *"flash-attn-off: hung: hung at graph_reserve: reserving a graph for ubatch"* ]]
  [[ "$output" == *"cwsr-off works: llama.cpp Debian (build 11669) on ROCm device ROCm0 (AMD Radeon Graphics), offloaded 17/17 layers: pp64: 768.8 t/s, tg16: 337.1 t/s"* ]]
  json=$HALOFORGE_STATE_DIR/llamacpp-rocm/ladder.json
  [ "$(grep -c '"id":' "$json")" -eq 3 ]
  grep -q '"id": "flash-attn-off", "status": "hung"' "$json"
  grep -q '"id": "cwsr-off", "status": "success"' "$json"
  run grep -q therock-nightly "$json"
  [ "$status" -ne 0 ]
  # Every rung ran with the strategy's environment and flags, on ROCm0 with JSONL rows, and
  # nothing after the winner.
  grep -q -- '--name haloforge-ladder-flash-attn-off.*-e HSA_ENABLE_SDMA=0.*llama-bench -m /models/tiny.gguf.* -v -o jsonl -dev ROCm0 -fa 0' "$T/calls"
  run grep -q 'haloforge-ladder-therock-nightly' "$T/calls"
  [ "$status" -ne 0 ]
  run bash "$S/llamacpp-rocm/02-verify.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"works on this box: cwsr-off (docker.io/kyuz0/amd-strix-halo-toolboxes:rocm-7.14)"* ]]
  [[ "$output" == *"verified: llama.cpp generated tokens on the GPU with strategy cwsr-off (docker.io/kyuz0/amd-strix-halo-toolboxes:rocm-7.14): llama.cpp Debian (build 11669) on ROCm device ROCm0"* ]]
  [ "$(cut -f1 "$HALOFORGE_RESULT_FILE")" = verified ]
}

@test "when no rung works the ladder says so and points to Vulkan; verify fails too" {
  export HALOFORGE_SYSFS_ROOT=$T/nosys
  for id in sdma-off flash-attn-off therock-nightly; do echo crash >"$T/outcome/$id"; done
  run bash "$S/llamacpp-rocm/01-run-ladder.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *"needs host change: /sys/module/amdgpu/parameters/cwsr_enable is unknown"* ]]
  [[ "$output" == *"use the llamacpp-vulkan track"* ]]
  json=$HALOFORGE_STATE_DIR/llamacpp-rocm/ladder.json
  [ "$(grep -c '"id":' "$json")" -eq 4 ]
  grep -q '"id": "cwsr-off", "status": "skipped"' "$json"
  run bash "$S/llamacpp-rocm/02-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *"no strategy worked on this box"* ]]
}

@test "BREAKS N2: a rung that generated on the CPU (real: its backend column still says ROCm) is no success" {
  echo cpubench >"$T/outcome/sdma-off"
  echo nodev >"$T/outcome/flash-attn-off"
  echo bench >"$T/outcome/therock-nightly"
  run bash "$S/llamacpp-rocm/01-run-ladder.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"sdma-off: failed: not on the GPU: llama-bench's pp64 row ran on devices 'auto', not ROCm0"* ]]
  [[ "$output" == *"flash-attn-off: failed: exit 1: error: invalid device: ROCm0"* ]]
  [[ "$output" == *"therock-nightly works: llama.cpp Debian (build 11669) on ROCm device ROCm0"* ]]
}

@test "without a model the ladder refuses before touching anything" {
  unset LLAMA_MODEL
  run bash "$S/llamacpp-rocm/01-run-ladder.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *"--set LLAMA_MODEL=/path/to/model.gguf"* ]]
  [ ! -e "$T/calls" ]
}

@test "json_str escapes quotes, backslashes and control characters" {
  run lib "json_str \$'a\"b\\\\c\td\ne'"
  [ "$output" = '"a\"b\\c\td\ne"' ]
}

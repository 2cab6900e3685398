#!/usr/bin/env bats
# Tests of the image tracks' shared helpers (lib/container.sh) and of the vllm-image,
# nightly-spoof, locked-spoof and ollama scripts. No GPU, engine or registry here: engine
# calls are checked in dry runs, or against a stand-in engine where a reply is needed.
# shellcheck disable=SC2016,SC2030,SC2031

setup() {
  S=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
  T=$BATS_TEST_TMPDIR
  export NO_COLOR=1 HALOFORGE_STATE_DIR=$T/state
  unset HALOFORGE_DRY_RUN HALOFORGE_CONTAINER_ENGINE OLLAMA_GPU_MEMORY VLLM_GPU_MEMORY_UTILIZATION
}

ct() { bash -c ". '$S/lib/common.sh'; . '$S/lib/container.sh'; $1"; }

@test "spoofed_target: HSA_OVERRIDE_GFX_VERSION to the gfx name the runtime reports" {
  run ct 'spoofed_target 11.0.0; spoofed_target 8.0.3; spoofed_target 11.5.1; spoofed_target 9.0.10'
  [ "$output" = "$(printf 'gfx1100\ngfx803\ngfx1151\ngfx90a')" ]
  run ct 'spoofed_target 11.0'
  [ "$status" -ne 0 ]
  [[ "$output" == *"must look like 11.0.0"* ]]
}

@test "gpu_flags: podman keeps the caller's groups, docker gets numeric groups, both unconfined" {
  run ct 'HALOFORGE_CONTAINER_ENGINE=podman gpu_flags | paste -sd" "'
  [ "$output" = "--device /dev/kfd --device /dev/dri --group-add keep-groups --security-opt seccomp=unconfined" ]
  run ct 'HALOFORGE_CONTAINER_ENGINE=docker gpu_flags | paste -sd" "'
  [[ "$output" == "--device /dev/kfd --device /dev/dri "*"--security-opt seccomp=unconfined" ]]
  [[ "$output" != *keep-groups* ]]
}

@test "need_gpu_devices stops a real run without /dev/kfd, with the reason" {
  [ -e /dev/kfd ] && skip "this machine has a GPU"
  run ct 'need_gpu_devices'
  [ "$status" -eq 1 ]
  [[ "$output" == *"missing on this host: /dev/kfd"*"no ROCm-capable device is detected"* ]]
  run ct 'HALOFORGE_ALLOW_NO_GPU=1 need_gpu_devices'
  [ "$status" -eq 0 ]
}

@test "the launcher: pinned image, devices, host IPC, seccomp, memory limit" {
  run bash "$S/vllm-image/01-write-launcher.sh"
  [ "$status" -eq 0 ]
  launcher=$T/state/vllm-image/start-vllm.sh
  [ -x "$launcher" ]
  run env START_VLLM_DRY_RUN=1 HOME="$T" "$launcher" Qwen/Qwen3-8B --max-model-len 8192
  [ "$status" -eq 0 ]
  image=$(sed -n 's/^VLLM_IMAGE=//p' "$S/../versions.env")
  [[ "$output" == *"run --rm -it --device /dev/kfd --device /dev/dri --group-add keep-groups --security-opt seccomp=unconfined --ipc=host -p 8000:8000 "* ]]
  [[ "$output" == *" --entrypoint vllm $image serve Qwen/Qwen3-8B --host 0.0.0.0 --port 8000 --gpu-memory-utilization 0.85 --max-model-len 8192"* ]]
}

@test "vLLM's own image (entrypoint vllm serve) runs the same way: the launcher sets the entrypoint" {
  VLLM_IMAGE=docker.io/vllm/vllm-openai-rocm:v0.19.0 bash "$S/vllm-image/01-write-launcher.sh"
  run env START_VLLM_DRY_RUN=1 HOME="$T" "$T/state/vllm-image/start-vllm.sh" Qwen/Qwen3-0.6B
  [ "$status" -eq 0 ]
  # `podman run IMAGE ARGS` would give vllm serve vllm serve …: the entrypoint is vllm, then serve MODEL
  [[ "$output" == *" --entrypoint vllm docker.io/vllm/vllm-openai-rocm:v0.19.0 serve Qwen/Qwen3-0.6B --host 0.0.0.0 --port 8000 "* ]]
  [[ "$output" != *"vllm serve"* ]]
  VLLM_IMAGE=docker.io/vllm/vllm-openai-rocm:v0.19.0 HALOFORGE_DRY_RUN=1 run bash "$S/vllm-image/02-verify.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"--entrypoint python3 docker.io/vllm/vllm-openai-rocm:v0.19.0 /haloforge/verify_torch.py"* ]]
  VLLM_IMAGE=docker.io/vllm/vllm-openai-rocm:v0.19.0 HALOFORGE_DRY_RUN=1 run bash "$S/vllm-image/00-pull-image.sh"
  [[ "$output" == *"pinned by tag: the digest it resolves to is recorded now, and haloforge pins lock writes it"* ]]
  [[ "$output" == *"[dry-run] podman pull docker.io/vllm/vllm-openai-rocm:v0.19.0"* ]]
}

@test "the launcher refuses more than 0.90 of the unified memory and explains why" {
  bash "$S/vllm-image/01-write-launcher.sh"
  run env START_VLLM_DRY_RUN=1 VLLM_GPU_MEMORY_UTILIZATION=0.95 "$T/state/vllm-image/start-vllm.sh" m
  [ "$status" -eq 2 ]
  [[ "$output" == *"up to 0.90"* ]]
  run env START_VLLM_DRY_RUN=1 HOME="$T" VLLM_GPU_MEMORY_UTILIZATION=0.9 "$T/state/vllm-image/start-vllm.sh" m
  [ "$status" -eq 0 ]
  run "$T/state/vllm-image/start-vllm.sh"
  [ "$status" -eq 2 ]
  [[ "$output" == *"Usage: start-vllm.sh MODEL"* ]]
}

@test "vllm-image verify checks torch, the target, vLLM's platform and its answers in the pinned image" {
  HALOFORGE_DRY_RUN=1 HALOFORGE_RUN_DIR=$T/run run bash "$S/vllm-image/02-verify.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"/haloforge/verify_vllm.py:ro,z -v "*"/haloforge/verify_answers.py:ro,z -e HALOFORGE_CHECK_VLLM=1 -e HALOFORGE_VERIFY_MODEL=Qwen/Qwen3-0.6B -e HF_TOKEN -v "*"/.cache/huggingface:/root/.cache/huggingface:z -v $T/run:$T/run:z -e HALOFORGE_EXPECT_ARCH=gfx1151 --entrypoint python3 docker.io/rocm/vllm:rocm10.0.0_"*" /haloforge/verify_torch.py"* ]]
  # W1: the answers, eager and compiled, each judged by haloforge verify
  [[ "$output" == *"--entrypoint python3 docker.io/rocm/vllm:rocm10.0.0_"*" /haloforge/verify_answers.py vllm eager MODEL_DIR $T/run/prompts.json $T/run/vllm-eager.json"* ]]
  [[ "$output" == *"/haloforge/verify_answers.py vllm compiled MODEL_DIR"* ]]
  [[ "$output" == *"verify --answers $T/run/vllm-compiled.json --track "* ]]
}

@test "run_nightly_spoof.sh shows the illegal-instruction risk before the spoofed command" {
  HALOFORGE_DRY_RUN=1 run bash "$S/nightly-spoof/run_nightly_spoof.sh" Qwen/Qwen3-8B
  [ "$status" -eq 0 ]
  risk=$(grep -n "Illegal instruction" <<<"$output" | head -n 1 | cut -d: -f1)
  cmd=$(grep -n "HSA_OVERRIDE_GFX_VERSION=11.0.0 .*docker.io/rocm/vllm-dev:nightly vllm serve Qwen/Qwen3-8B" <<<"$output" | cut -d: -f1)
  [ -n "$risk" ] && [ -n "$cmd" ] && [ "$risk" -lt "$cmd" ]
  [[ "$output" == *"proceeding (non-interactive)"* ]]
}

@test "run_nightly_spoof.sh asks on a terminal: no stops it, yes runs it" {
  command -v script >/dev/null || skip "needs util-linux script for a pty"
  mkdir -p "$T/bin"
  printf '#!/bin/sh\necho "$*" >>%s/calls\n' "$T" >"$T/bin/podman"
  chmod +x "$T/bin/podman"
  cmd="HALOFORGE_ALLOW_NO_GPU=1 HALOFORGE_CONTAINER_ENGINE=$T/bin/podman HALOFORGE_STATE_DIR=$T/state bash $S/nightly-spoof/run_nightly_spoof.sh some/model"
  run bash -c "printf 'n\\n' | script -qec '$cmd' /dev/null"
  [[ "$output" == *"[y/N]"* ]]
  [[ "$output" == *"stopped: nothing was run"* ]]
  [ ! -e "$T/calls" ]
  run bash -c "printf 'y\\n' | script -qec '$cmd' /dev/null"
  grep -q "run --rm -it .*-e HSA_OVERRIDE_GFX_VERSION=11.0.0 .*vllm serve some/model" "$T/calls"
}

@test "the locked spoof builds FROM the seed digest with the spoof version" {
  HALOFORGE_DRY_RUN=1 run bash "$S/locked-spoof/build_spoof_locked.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"--build-arg SPOOF_BASE_DIGEST=sha256:a92fa9cb915027468e85e147f4dd1c87f026d7974610280546a2a1f94a146889"* ]]
  [[ "$output" == *"--build-arg SPOOF_GFX_VERSION=11.0.0"* ]]
  [[ "$output" == *"-t localhost/haloforge/vllm-spoof-locked:a92fa9cb"* ]]
  SPOOF_BASE_DIGEST=sha256:short HALOFORGE_DRY_RUN=1 run bash "$S/locked-spoof/build_spoof_locked.sh"
  [ "$status" -eq 2 ]
}

@test "ollama_gpu_line: a ROCm line from Ollama's log passes, a CPU-only log fails" {
  gfx1151='time=2026-01-10T10:00:00.000Z level=INFO source=types.go:42 msg="inference compute" id=0 library=ROCm compute=gfx1151 libdirs=ollama,rocm_v7_2 name="Radeon 8060S Graphics" total="96.0 GiB" available="95.2 GiB"'
  old='time=2025-05-29T13:50:36.129-03:00 level=INFO source=types.go:130 msg="inference compute" id=0 library=rocm variant="" compute=gfx1102 driver=0.0 name=1002:7480 total="8.0 GiB" available="7.0 GiB"'
  cpu='time=2026-01-10T10:00:00.000Z level=INFO source=types.go:42 msg="inference compute" id=cpu library=cpu compute="" name=cpu total="123.0 GiB"'
  run ct "ollama_gpu_line <<<'$gfx1151'"
  [ "$status" -eq 0 ]
  [[ "$output" == *compute=gfx1151* ]]
  run ct "ollama_gpu_line <<<'$old'"
  [ "$status" -eq 0 ]
  run ct "ollama_gpu_line <<<'$cpu'"
  [ "$status" -eq 1 ]
}

@test "run_ollama.sh passes the real memory variable and warns about the one that does not exist" {
  export HALOFORGE_DRY_RUN=1 OLLAMA_GPU_MEMORY=96GB OLLAMA_GPU_OVERHEAD=8589934592 OLLAMA_KV_CACHE_TYPE=q8_0
  run bash "$S/ollama/run_ollama.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"OLLAMA_GPU_MEMORY=96GB is ignored: Ollama has no such variable"* ]]
  [[ "$output" == *"-e OLLAMA_GPU_OVERHEAD=8589934592 -e OLLAMA_KV_CACHE_TYPE=q8_0 docker.io/ollama/ollama:0.32.15-rocm"* ]]
  [[ "$output" == *"-p 127.0.0.1:11434:11434 -v haloforge-ollama:/root/.ollama"* ]]
  [[ "$output" != *"-e OLLAMA_GPU_MEMORY"* ]]
  [[ "$output" != *"-e HSA_OVERRIDE_GFX_VERSION"* ]]
  OLLAMA_GPU_OVERHEAD=8GB run bash "$S/ollama/run_ollama.sh"
  [ "$status" -eq 2 ]
}

@test "ollama_gpu_line LIBRARY: a Vulkan line passes for vulkan only; a ROCm line for rocm only" {
  vk='time=2026-11-29T10:00:00.000Z level=INFO source=types.go:42 msg="inference compute" id=0 filter_id="" library=Vulkan compute=0.0 name=Vulkan0 description="AMD Radeon Graphics (RADV GFX1151)" libdirs=ollama,vulkan type=iGPU total="96.0 GiB" available="95.2 GiB"'
  rocm='time=2026-01-10T10:00:00.000Z level=INFO source=types.go:42 msg="inference compute" id=0 library=ROCm compute=gfx1151 name="Radeon 8060S Graphics" total="96.0 GiB"'
  run ct "ollama_gpu_line Vulkan <<<'$vk'"
  [ "$status" -eq 0 ]
  [[ "$output" == *RADV* ]]
  run ct "ollama_gpu_line <<<'$vk'"
  [ "$status" -eq 1 ]
  run ct "ollama_gpu_line Vulkan <<<'$rocm'"
  [ "$status" -eq 1 ]
  run ct "ollama_gpu_line rocm <<<'$rocm'"
  [ "$status" -eq 0 ]
}

@test "ollama on Vulkan: the plain image, /dev/dri only, OLLAMA_VULKAN=1 and OLLAMA_IGPU_ENABLE=1" {
  export HALOFORGE_DRY_RUN=1 OLLAMA_BACKEND=vulkan HALOFORGE_CONTAINER_ENGINE=podman
  run bash "$S/ollama/run_ollama.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"[dry-run] podman run -d --name haloforge-ollama --restart unless-stopped --device /dev/dri --group-add keep-groups -p 127.0.0.1:11434:11434 -v haloforge-ollama:/root/.ollama -e OLLAMA_GPU_OVERHEAD=0 -e OLLAMA_VULKAN=1 -e OLLAMA_IGPU_ENABLE=1 docker.io/ollama/ollama:0.32.15"* ]]
  [[ "$output" != *"/dev/kfd"* ]]
  [[ "$output" != *"0.32.15-rocm"* ]]
  run bash "$S/ollama/00-pull-image.sh"
  [[ "$output" == *"[dry-run] podman pull docker.io/ollama/ollama:0.32.15"* ]]
  [[ "$output" != *"-rocm"* ]]
  # the default is ROCm, with both device nodes and no Vulkan variables
  unset OLLAMA_BACKEND
  run bash "$S/ollama/run_ollama.sh"
  [[ "$output" == *"--device /dev/kfd --device /dev/dri "*" docker.io/ollama/ollama:0.32.15-rocm"* ]]
  [[ "$output" != *OLLAMA_VULKAN* ]]
  OLLAMA_BACKEND=metal run bash "$S/ollama/run_ollama.sh"
  [ "$status" -eq 2 ]
  [[ "$output" == *"OLLAMA_BACKEND must be rocm or vulkan, got 'metal'"* ]]
}

# ollama_standins LOG: a real HTTP server on the loopback answering Ollama's /api/version
# (python3 -m http.server over a file, standing in for Ollama itself), and a stand-in engine
# whose `logs` prints LOG; exports what 02-verify.sh reads.
ollama_standins() {
  mkdir -p "$T/www/api" "$T/bin"
  printf '{"version":"0.32.15"}' >"$T/www/api/version"
  printf '%s\n' "$1" >"$T/ollama.log"
  printf '#!/bin/sh\n# stand-in engine for the bats tests: only `logs` answers\n[ "$1" = logs ] && cat "%s"\nexit 0\n' "$T/ollama.log" >"$T/bin/podman"
  chmod +x "$T/bin/podman"
  python3 -u -m http.server --bind 127.0.0.1 0 --directory "$T/www" >"$T/http.log" 2>&1 &
  echo $! >"$T/http.pid"
  local port=''
  for _ in $(seq 1 50); do
    port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$T/http.log" | head -n 1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ]
  export OLLAMA_PORT=$port HALOFORGE_CONTAINER_ENGINE=$T/bin/podman HALOFORGE_RESULT_FILE=$T/results.tsv
}

teardown() {
  if [ -f "$T/http.pid" ]; then kill "$(cat "$T/http.pid")" 2>/dev/null || true; fi
}

@test "N9: ollama's verify records what it proved: the GPU line of its log, as verified" {
  ollama_standins 'time=2026-01-10T10:00:00.000Z level=INFO source=types.go:42 msg="inference compute" id=0 library=ROCm compute=gfx1151 libdirs=ollama,rocm_v7_2 name="Radeon 8060S Graphics" total="96.0 GiB" available="95.2 GiB"'
  run bash "$S/ollama/02-verify.sh"
  [ "$status" -eq 0 ]
  [ "$(cat "$T/results.tsv")" = "$(printf 'verified\tOllama 0.32.15 runs on the ROCm GPU: id=0 library=ROCm compute=gfx1151 libdirs=ollama,rocm_v7_2 name="Radeon 8060S Graphics" total="96.0 GiB" available="95.2 GiB"')" ]
}

@test "N9: ollama on the CPU only is recorded as not verified, with the reason, and fails" {
  ollama_standins 'time=2026-01-10T10:00:00.000Z level=INFO source=types.go:42 msg="inference compute" id=cpu library=cpu compute="" name=cpu total="123.0 GiB"'
  run bash "$S/ollama/02-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$(cat "$T/results.tsv")" == "$(printf 'not-verified\t')Ollama runs on the CPU only: no ROCm GPU in its log"* ]]
}

@test "ollama's verify on Vulkan wants a Vulkan GPU line: a ROCm or CPU line is not it" {
  ollama_standins 'time=2026-11-29T10:00:00.000Z level=INFO source=types.go:42 msg="inference compute" id=0 library=Vulkan compute=0.0 name=Vulkan0 description="AMD Radeon Graphics (RADV GFX1151)" type=iGPU total="96.0 GiB" available="95.2 GiB"'
  OLLAMA_BACKEND=vulkan run bash "$S/ollama/02-verify.sh"
  [ "$status" -eq 0 ]
  [[ "$(cat "$T/results.tsv")" == "$(printf 'verified\t')Ollama 0.32.15 runs on the Vulkan GPU: id=0 library=Vulkan"* ]]
  printf '%s\n' 'time=2026-11-29T10:00:00.000Z level=INFO source=runner.go:445 msg="dropping integrated GPU; to enable, set OLLAMA_IGPU_ENABLE=1" id=0 library=Vulkan' \
    'time=2026-11-29T10:00:00.000Z level=INFO source=types.go:42 msg="inference compute" id=cpu library=cpu compute="" name=cpu total="123.0 GiB"' >"$T/ollama.log"
  OLLAMA_BACKEND=vulkan run bash "$S/ollama/02-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *"dropping integrated GPU"* ]]
  [[ "$(cat "$T/results.tsv")" == *"$(printf 'not-verified\t')Ollama runs on the CPU only: no Vulkan GPU in its log"* ]]
}

@test "row 22: nightly-spoof says its rocm/vllm-dev image is deprecated upstream, and what replaces it" {
  HALOFORGE_DRY_RUN=1 run bash "$S/nightly-spoof/00-pull-image.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"rocm/vllm-dev is deprecated upstream (vllm/vllm-openai-rocm replaces it)"* ]]
  [[ "$output" == *"[dry-run] podman pull docker.io/rocm/vllm-dev:nightly"* ]]
  NIGHTLY_IMAGE=docker.io/example/other:nightly HALOFORGE_DRY_RUN=1 run bash "$S/nightly-spoof/00-pull-image.sh"
  [[ "$output" != *"deprecated upstream"* ]]
}

@test "row 22: vllm-image says its default rocm/vllm image is deprecated upstream too, and why it stays" {
  HALOFORGE_DRY_RUN=1 run bash "$S/vllm-image/00-pull-image.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"rocm/vllm is deprecated upstream (vllm/vllm-openai-rocm replaces it): this image is pinned by the digest verified on a Radeon 8060S"* ]]
  VLLM_IMAGE=docker.io/vllm/vllm-openai-rocm:v0.31.0 HALOFORGE_DRY_RUN=1 run bash "$S/vllm-image/00-pull-image.sh"
  [[ "$output" != *"deprecated upstream"* ]]
}

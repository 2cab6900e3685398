#!/usr/bin/env bats
# Tests of scripts/lib/llama_gpu_evidence.py, the one proof the llama.cpp tracks share that a
# run used the GPU, on REAL output of Debian sid's llama.cpp (build 11669) captured on Mesa's
# llvmpipe and on the CPU (testdata/README.md), and variants of it named as such.
# shellcheck disable=SC2016

setup() {
  S=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
  D=$BATS_TEST_DIRNAME/testdata
  T=$BATS_TEST_TMPDIR
}

check() { python3 "$S/lib/llama_gpu_evidence.py" "$@"; }

@test "a -dev Vulkan0 run (real JSON) is proven, with its speeds as TEST<TAB>t/s lines" {
  run check bench "$D/llama-bench-lavapipe-dev.json" --backend Vulkan --device Vulkan0 --allow-llvmpipe
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "llama.cpp Debian (build 11669) on Vulkan device Vulkan0 (llvmpipe (LLVM 22.1.8, 256 bits)): pp64: 773.3 t/s, tg16: 241.0 t/s" ]
  [ "${lines[1]}" = "$(printf 'pp64\t773.34')" ]
  [ "${lines[2]}" = "$(printf 'tg16\t241.01')" ]
}

@test "llvmpipe is Mesa's CPU device: not a GPU unless the test mode allows it" {
  run check bench "$D/llama-bench-lavapipe-dev.json" --backend Vulkan --device Vulkan0
  [ "$status" -eq 1 ]
  [ "$output" = "Vulkan ran on llvmpipe, Mesa's CPU device, not on a GPU" ]
}

@test "BREAKS N2: a real CPU-only run of a Vulkan build says backends Vulkan, and is refused" {
  # The real run: Vulkan compiled in, no Vulkan device ("ggml_vulkan: No devices found"), so
  # every layer ran on the CPU; its JSON still says "backends": "Vulkan".
  grep -q '"backends": "Vulkan"' "$D/llama-bench-cpu-only.json"
  grep -q '"gpu_info": ""' "$D/llama-bench-cpu-only.json"
  run check bench "$D/llama-bench-cpu-only.json" --backend Vulkan --device Vulkan0 --allow-llvmpipe
  [ "$status" -eq 1 ]
  [[ "$output" == "llama-bench's pp64 row ran on devices 'auto', not Vulkan0: without -dev Vulkan0"* ]]
  # Its markdown table, which the old checks read, shows "Vulkan" in the backend column too.
  grep -q '| Vulkan     | 999 |            tg16 |' "$D/llama-bench-cpu-only.md"
  run check bench "$D/llama-bench-cpu-only.md" --backend Vulkan --device Vulkan0
  [ "$status" -eq 1 ]
  [ "$output" = "llama-bench printed no result rows" ]
}

@test "a -dev run whose gpu_info is empty is refused (variant: devices set, no GPU listed)" {
  sed 's/"gpu_info": "llvmpipe[^"]*"/"gpu_info": ""/' "$D/llama-bench-lavapipe-dev.json" >"$T/variant.json"
  run check bench "$T/variant.json" --backend Vulkan --device Vulkan0
  [ "$status" -eq 1 ]
  [ "$output" = "llama-bench found no GPU device (gpu_info is empty): pp64 ran on the CPU" ]
}

@test "-o jsonl -v: rows are found among the log lines, and the offload line is part of the proof" {
  run check bench "$D/llama-bench-lavapipe-v.log" --backend Vulkan --device Vulkan0 --allow-llvmpipe
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == *"on Vulkan device Vulkan0 (llvmpipe (LLVM 22.1.8, 256 bits)), offloaded 3/3 layers: pp64: "* ]]
  run check bench "$D/llama-bench-cpu-only-v.log" --backend Vulkan --device Vulkan0 --allow-llvmpipe
  [ "$status" -eq 1 ]
  [[ "$output" == *"ran on devices 'auto', not Vulkan0"* ]]
  # Variant: the same GPU log with the layers left on the CPU.
  sed 's#offloaded 3/3 layers to GPU#offloaded 0/3 layers to GPU#' "$D/llama-bench-lavapipe-v.log" >"$T/v.log"
  run check bench "$T/v.log" --backend Vulkan --device Vulkan0 --allow-llvmpipe
  [ "$status" -eq 1 ]
  [ "$output" = "llama.cpp offloaded 0/3 layers to the GPU: the model ran on the CPU" ]
}

@test "the backend and the device must be the ones asked for (variant: a ROCm check on a Vulkan run)" {
  run check bench "$D/llama-bench-lavapipe-dev.json" --backend ROCm --device ROCm0 --allow-llvmpipe
  [ "$status" -eq 1 ]
  [[ "$output" == "llama-bench ran with backends 'Vulkan', not ROCm: the GPU backend did not load (CPU only)" ]]
  sed 's/"backends": "Vulkan"/"backends": "ROCm"/' "$D/llama-bench-lavapipe-dev.json" >"$T/rocm.json"
  run check bench "$T/rocm.json" --backend ROCm --device ROCm0 --allow-llvmpipe
  [ "$status" -eq 1 ]
  [[ "$output" == "llama-bench's pp64 row ran on devices 'Vulkan0', not ROCm0"* ]]
}

@test "test-backend-ops (real): Vulkan0 tested and passed is proven; llvmpipe only in test mode" {
  run check backend-ops "$D/test-backend-ops-vulkan0.txt" --device Vulkan0 --allow-llvmpipe
  [ "$status" -eq 0 ]
  [ "$output" = "test-backend-ops: 10/10 tests passed on Vulkan0 (llvmpipe (LLVM 22.1.8, 256 bits))" ]
  run check backend-ops "$D/test-backend-ops-vulkan0.txt" --device Vulkan0
  [ "$status" -eq 1 ]
  [ "$output" = "test-backend-ops ran on Vulkan0 = llvmpipe, Mesa's CPU device, not on a GPU" ]
}

@test "BREAKS N7: test-backend-ops with no Vulkan device exits 0 and says OK (real): refused" {
  grep -q '1/1 backends passed' "$D/test-backend-ops-no-device.txt"
  run check backend-ops "$D/test-backend-ops-no-device.txt" --device Vulkan0
  [ "$status" -eq 1 ]
  [ "$output" = "test-backend-ops tested no device Vulkan0 (devices: CPU)" ]
}

@test "BREAKS N7: a filter that matches nothing passes 0/0 with Backend Vulkan0 OK (real): refused" {
  grep -q '0/0 tests passed' "$D/test-backend-ops-no-match.txt"
  run check backend-ops "$D/test-backend-ops-no-match.txt" --device Vulkan0 --allow-llvmpipe
  [ "$status" -eq 1 ]
  [ "$output" = "test-backend-ops ran 0 tests on Vulkan0: the filter matched nothing it supports, so nothing was proven" ]
}

@test "test-backend-ops with a wrong result is refused (variant: one case FAIL)" {
  sed -e '0,/32mOK/s/\x1b\[1;32mOK\x1b\[0m/\x1b[1;31mFAIL\x1b[0m/' -e 's#10/10 tests passed#9/10 tests passed#' \
    -e 's/Backend Vulkan0: \x1b\[1;32mOK/Backend Vulkan0: \x1b[1;31mFAIL/' "$D/test-backend-ops-vulkan0.txt" >"$T/fail.txt"
  run check backend-ops "$T/fail.txt" --device Vulkan0 --allow-llvmpipe
  [ "$status" -eq 1 ]
  [ "$output" = "test-backend-ops: Vulkan0 FAILED: 9/10 tests passed: it computes results that differ from the CPU" ]
}

@test "bad usage and unreadable input are exit 2, with the reason" {
  run check bench "$D/llama-bench-lavapipe-dev.json" --device Vulkan0
  [ "$status" -eq 2 ]
  [ "$output" = "bench needs --device and --backend" ]
  run check bench "$T/missing.json" --backend Vulkan --device Vulkan0
  [ "$status" -eq 2 ]
  [[ "$output" == "cannot read $T/missing.json: No such file or directory" ]]
  run check nonsense
  [ "$status" -eq 2 ]
}

@test "hostile bytes and junk lines do not count as rows, and do not crash the reader" {
  printf '\x1b]0;title\x07{"avg_ts": "x"\n{not json}\n[\n{broken\n' >"$T/junk.txt"
  run check bench "$T/junk.txt" --backend Vulkan --device Vulkan0
  [ "$status" -eq 1 ]
  [ "$output" = "llama-bench printed no result rows" ]
}

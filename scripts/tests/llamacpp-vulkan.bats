#!/usr/bin/env bats
# Tests of the llamacpp-vulkan track: the llama-bench parser on real llama-bench output
# (testdata/, sources in testdata/README.md) and the verify step with a stand-in container
# engine (no GPU or registry here) that prints real vulkaninfo and llama-bench output.
# shellcheck disable=SC2016

setup() {
  S=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
  D=$BATS_TEST_DIRNAME/testdata
  T=$BATS_TEST_TMPDIR
  export NO_COLOR=1 HALOFORGE_STATE_DIR=$T/state HALOFORGE_RUN_DIR=$T/state/runs/r1 HALOFORGE_ALLOW_NO_GPU=1
  unset HALOFORGE_DRY_RUN LLAMA_MODEL
}

parse() { awk -f "$S/llamacpp-vulkan/parse_llama_bench.awk" "$@"; }

@test "parser: prompt and generation rows of a Vulkan run, stddev dropped" {
  run parse "$D/llama-bench-vulkan-rx580.md"
  [ "$status" -eq 0 ]
  [ "$output" = "$(printf 'pp512\t346.76\npp4096\t255.79\ntg128\t36.23\npp4096+tg128\t182.59')" ]
}

@test "parser: finds test and t/s among extra columns (Strix Halo, ROCm+Vulkan)" {
  run parse "$D/llama-bench-strix-halo-rocm-vulkan.md"
  [ "$status" -eq 0 ]
  [ "$output" = "$(printf 'pp128\t124.14\npp256\t191.08')" ]
}

@test "parser: depth rows keep their full test name" {
  run parse "$D/llama-bench-depth.md"
  [ "${lines[2]}" = "$(printf 'pp512 @ d5000\t170.06')" ]
  [ "${lines[3]}" = "$(printf 'tg128 @ d5000\t9.09')" ]
}

@test "parser: no table, no result, non-zero" {
  run parse <<<"ggml_vulkan: Found 0 Vulkan devices"
  [ "$status" -eq 1 ]
  [ -z "$output" ]
  run parse <<<"$(printf '| a | b |\n| - | - |\n| 1 | 2 |\n')"
  [ "$status" -eq 1 ]
}

# engine: a stand-in podman printing a real vulkaninfo summary, or a real llama-bench table.
engine() {
  mkdir -p "$T/bin"
  cat >"$T/bin/podman" <<FAKE
#!/usr/bin/env bash
printf '%s\n' "\$*" >>"$T/calls"
case "\$*" in
*vulkaninfo*) printf '%s\n' 'Devices:' '========' 'GPU0:' '	apiVersion         = 1.4.318' '	deviceType         = PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU' '	deviceName         = Radeon 8060S Graphics (RADV GFX1151)' '	driverName         = radv' ;;
*llama-bench*) cat "$D/llama-bench-vulkan-rx580.md" ;;
esac
FAKE
  chmod +x "$T/bin/podman"
  export HALOFORGE_CONTAINER_ENGINE=$T/bin/podman
}

@test "verify without a model checks RADV and says how to pass one" {
  engine
  run bash "$S/llamacpp-vulkan/01-verify.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"RADV drives the GPU"* ]]
  [[ "$output" == *"--set LLAMA_MODEL=/path/to/model.gguf"* ]]
  run grep -q llama-bench "$T/calls"
  [ "$status" -ne 0 ]
}

@test "verify with a model reports prompt and generation tokens/s and keeps them" {
  engine
  mkdir -p "$T/models" && : >"$T/models/m.gguf"
  LLAMA_MODEL=$T/models/m.gguf run bash "$S/llamacpp-vulkan/01-verify.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"prompt processing (pp512): 346.76 tokens/s"* ]]
  [[ "$output" == *"generation (tg128): 36.23 tokens/s"* ]]
  grep -q -- "-v $T/models:/models:ro,z .* llama-bench -m /models/m.gguf -ngl 99" "$T/calls"
  [ "$(cut -f2- "$HALOFORGE_STATE_DIR/llamacpp-vulkan/bench.tsv" | head -n 1)" = "$(printf 'm.gguf\tpp512\t346.76')" ]
}

@test "verify refuses a model path that does not exist" {
  engine
  LLAMA_MODEL=$T/nope.gguf run bash "$S/llamacpp-vulkan/01-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *"LLAMA_MODEL=$T/nope.gguf: no such file"* ]]
}

@test "the build passes GGML_VULKAN's pins and tags the pinned image" {
  HALOFORGE_DRY_RUN=1 run bash "$S/llamacpp-vulkan/build_vulkan.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"build -f "*"/toolbox/Dockerfile.vulkan -t localhost/haloforge/llamacpp-vulkan:b10590"* ]]
  [[ "$output" == *"--build-arg LLAMACPP_REF=b10590"* ]]
  grep -q 'DGGML_VULKAN=ON' "$S/../toolbox/Dockerfile.vulkan"
}

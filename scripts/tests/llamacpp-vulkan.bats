#!/usr/bin/env bats
# Tests of the llamacpp-vulkan track: the verify step with a stand-in container engine (no
# GPU or registry here) that plays real output of Debian sid's llama.cpp (testdata/, sources
# in testdata/README.md): test-backend-ops and llama-bench, on lavapipe and on the CPU. Where
# a GPU must appear, the lavapipe output's device name is replaced by the 8060S's (a variant,
# named so in the engine).
# shellcheck disable=SC2016

load answers_standin

setup() {
  S=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
  D=$BATS_TEST_DIRNAME/testdata
  T=$BATS_TEST_TMPDIR
  export NO_COLOR=1 HALOFORGE_STATE_DIR=$T/state HALOFORGE_RUN_DIR=$T/state/runs/r1 HALOFORGE_ALLOW_NO_GPU=1
  unset HALOFORGE_DRY_RUN LLAMA_MODEL
}

# engine [OPS [BENCH]]: a stand-in podman printing a real vulkaninfo summary, OPS as
# test-backend-ops' output (default: the real Vulkan0 run, its llvmpipe device renamed to the
# 8060S: a GPU stand-in) and BENCH as llama-bench's (default: the real -dev Vulkan0 JSON,
# renamed the same way); with BENCH_MD, a llama-bench run without -o json prints that table.
engine() {
  local ops=${1:-$T/ops-gpu.txt} bench=${2:-$T/bench-gpu.json}
  mkdir -p "$T/bin"
  sed 's/llvmpipe (LLVM 22.1.8, 256 bits)/Radeon 8060S Graphics (RADV GFX1151)/' "$D/test-backend-ops-vulkan0.txt" >"$T/ops-gpu.txt"
  sed 's/llvmpipe (LLVM 22.1.8, 256 bits)/Radeon 8060S Graphics (RADV GFX1151)/' "$D/llama-bench-lavapipe-dev.json" >"$T/bench-gpu.json"
  cat >"$T/bin/podman" <<FAKE
#!/usr/bin/env bash
# stand-in podman for the bats tests
printf '%s\n' "\$*" >>"$T/calls"
case "\$*" in
*vulkaninfo*) printf '%s\n' 'Devices:' '========' 'GPU0:' '	apiVersion         = 1.4.318' '	deviceType         = PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU' '	deviceName         = Radeon 8060S Graphics (RADV GFX1151)' '	driverName         = radv' ;;
*test-backend-ops*) cat "$ops" ;;
*'llama-bench --help'*) echo '  -lm, --load-mode <auto|none|mmap|mlock|mmap+mlock|dio> (default: auto)' ;;
*'llama-server --help'*) echo '  --mmap, --no-mmap    whether to memory-map the model' ;;
*' stop '*) ;;
*' llama-server '*) a="\$*"; exec "$T/bin/llama-server" \${a#* llama-server } ;;
*'llama-bench'*'-o json'*) cat "$bench" ;;
*llama-bench*) cat "\${BENCH_MD:-/dev/null}" ;;
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
  [[ "$output" == *"verified: llama.cpp b10590: test-backend-ops: 10/10 tests passed on Vulkan0 (Radeon 8060S Graphics (RADV GFX1151)) (matches the CPU backend)"* ]]
  [[ "$output" == *"--set LLAMA_MODEL=/path/to/model.gguf"* ]]
  run grep -q llama-bench "$T/calls"
  [ "$status" -ne 0 ]
}

@test "verify with a model reports prompt and generation tokens/s and keeps them" {
  engine
  mkdir -p "$T/models" && : >"$T/models/m.gguf"
  LLAMA_MODEL=$T/models/m.gguf run bash "$S/llamacpp-vulkan/01-verify.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"prompt processing (pp64): 773.34 tokens/s"* ]]
  [[ "$output" == *"generation (tg16): 241.01 tokens/s"* ]]
  [[ "$output" == *"verified: llama-bench ran m.gguf: llama.cpp Debian (build 11669) on Vulkan device Vulkan0 (Radeon 8060S Graphics (RADV GFX1151)): pp64: 773.3 t/s, tg16: 241.0 t/s"* ]]
  # flash attention on and no mmap, with the switch this llama-bench lists (build 11669: -lm)
  grep -q -- "-v $T/models:/models:ro,z .* llama-bench -m /models/m.gguf -ngl 99 -fa 1 -lm none -p 512 -n 128 -o json -dev Vulkan0" "$T/calls"
  [ "$(cut -f2- "$HALOFORGE_STATE_DIR/llamacpp-vulkan/bench.tsv" | head -n 1)" = "$(printf 'm.gguf\tpp64\t773.34')" ]
}

@test "verify with a model compares its answers on Vulkan0 with the image's CPU backend" {
  engine
  stand_in_answers
  export HALOFORGE_TRACK=llamacpp-vulkan
  mkdir -p "$T/models" && : >"$T/models/m.gguf"
  LLAMA_MODEL=$T/models/m.gguf run bash "$S/llamacpp-vulkan/01-verify.sh"
  [ "$status" -eq 0 ]
  grep -q -- "run --rm --name llama-reference --network host --device /dev/dri .*-v $T/models:/models:ro,z .*llama-server -m /models/m.gguf -ngl 0 --device none --host 127.0.0.1" "$T/calls"
  grep -q -- "run --rm --name llama-under-test --network host .*llama-server -m /models/m.gguf -ngl 99 -fa on --device Vulkan0 --no-mmap --host 127.0.0.1" "$T/calls"
  grep -q -- "--reference-for $T/models/m.gguf --track llamacpp-vulkan" "$T/hf-calls"
  [[ "$output" == *"verified: answers on Vulkan0: right: 6 prompts agree with the reference recorded on CPU"* ]]
}

@test "verify with a model fails on WRONG OUTPUT, the evidence said" {
  engine
  stand_in_answers
  mkdir -p "$T/models" && : >"$T/models/m.gguf"
  LLAMA_MODEL=$T/models/m.gguf FX_ANSWERS=wrong run bash "$S/llamacpp-vulkan/01-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *'answers on Vulkan0: WRONG OUTPUT: prompt 1 (capital, "The capital of France is"), position 0'* ]]
}

@test "BREAKS N7: test-backend-ops that tested no Vulkan device (real: exit 0, OK) fails the verify" {
  engine "$D/test-backend-ops-no-device.txt"
  run bash "$S/llamacpp-vulkan/01-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *"error: test-backend-ops tested no device Vulkan0 (devices: CPU)"* ]]
  [[ "$output" != *"verified: llama.cpp"* ]]
}

@test "BREAKS N7: a MUL_MAT run that executed 0 tests (real: 0/0, OK) fails the verify" {
  sed 's/llvmpipe (LLVM 22.1.8, 256 bits)/Radeon 8060S Graphics (RADV GFX1151)/' "$D/test-backend-ops-no-match.txt" >"$T/nomatch.txt"
  engine "$T/nomatch.txt"
  run bash "$S/llamacpp-vulkan/01-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *"test-backend-ops ran 0 tests on Vulkan0"* ]]
}

@test "BREAKS N2: llama-bench that ran on the CPU (real: backend column says Vulkan) fails the verify" {
  engine "" "$D/llama-bench-cpu-only.json"
  mkdir -p "$T/models" && : >"$T/models/m.gguf"
  BENCH_MD=$D/llama-bench-cpu-only.md LLAMA_MODEL=$T/models/m.gguf run bash "$S/llamacpp-vulkan/01-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *"ran on devices 'auto', not Vulkan0"* ]]
  [ ! -s "$HALOFORGE_STATE_DIR/llamacpp-vulkan/bench.tsv" ]
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

@test "llama_nommap_flags: -mmp 0 where llama-bench lists -mmp, -lm none where it lists --load-mode, else nothing" {
  lb() { bash -c ". '$S/lib/common.sh'; . '$S/lib/llama.sh'; $1"; }
  run lb "printf '  -mmp, --mmap <0|1>                        (default: 1)\n' | llama_nommap_flags | paste -sd' '"
  [ "$output" = "-mmp 0" ]
  run lb "printf '  -lm, --load-mode <auto|none|mmap|mlock|mmap+mlock|dio> (default: auto)\n' | llama_nommap_flags | paste -sd' '"
  [ "$output" = "-lm none" ]
  run lb "printf 'usage: llama-bench [options]\n' | llama_nommap_flags"
  [ -z "$output" ]
  # llama-server's own switch, in an older build and in Debian sid's 11669 (real lines), whose
  # --no-mmproj is no -mmp
  run lb "printf '  --mmap, --no-mmap    whether to memory-map the model\n' | llama_nommap_flags | paste -sd' '"
  [ "$output" = "--no-mmap" ]
  run lb "printf '%s\n' '-lm,   --load-mode MODE                 model loading mode (default: auto)' '--mmproj-auto, --no-mmproj, --no-mmproj-auto' '-mm,   --mmproj FILE                    path to a multimodal projector file' | llama_nommap_flags | paste -sd' '"
  [ "$output" = "-lm none" ]
}

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# llamacpp-vulkan, step "verify": Vulkan sees the GPU through RADV inside the image, and
# ggml's own test-backend-ops -o MUL_MAT -b Vulkan0 passes (the Vulkan matrix multiplications
# match the CPU backend: proof without a model); with LLAMA_MODEL set, llama-bench runs, its
# rows must report the Vulkan backend (not CPU only), and its prompt (pp) and generation (tg)
# tokens/s are saved to $HALOFORGE_STATE_DIR/llamacpp-vulkan/bench.tsv.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
# shellcheck source=./report.sh
. "$(dirname "${BASH_SOURCE[0]}")/report.sh"
hf_init "$@"

require_env VULKAN_IMAGE
eng=$(engine)
mapfile -t dri < <(dri_flags)
if [[ ! -e /dev/dri ]]; then
  is_dry_run || [[ "${HALOFORGE_ALLOW_NO_GPU:-0}" == 1 ]] \
    || die "no /dev/dri on this host: the GPU driver (amdgpu) is not loaded, or nomodeset is on the kernel command line"
  log_warn "no /dev/dri on this host (a real run stops here)"
fi

hf_verify_begin
log_step "Vulkan devices in $VULKAN_IMAGE"
if is_dry_run; then
  run "$eng" run --rm "${dri[@]}" "$VULKAN_IMAGE" vulkaninfo --summary
else
  summary=$(run "$eng" run --rm "${dri[@]}" "$VULKAN_IMAGE" vulkaninfo --summary 2>&1) || {
    printf '%s\n' "$summary"
    die "vulkaninfo failed in $VULKAN_IMAGE"
  }
  printf '%s\n' "$summary"
  grep -q 'PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU\|PHYSICAL_DEVICE_TYPE_DISCRETE_GPU' <<<"$summary" \
    || die "Vulkan sees no GPU (only llvmpipe?): check /dev/dri and your groups (render, video)"
  if grep -q 'driverName *= *radv' <<<"$summary"; then
    log_ok "RADV drives the GPU"
  else
    log_warn "the GPU is not driven by RADV; AMDVLK caps buffers at 2 GiB (run with AMD_VULKAN_ICD=RADV)"
  fi
fi

log_step "Vulkan matrix multiplication against the CPU (test-backend-ops -o MUL_MAT)"
ops=("$eng" run --rm "${dri[@]}" "$VULKAN_IMAGE" test-backend-ops -o MUL_MAT -b Vulkan0)
if is_dry_run; then
  run "${ops[@]}"
else
  run "${ops[@]}" 2>&1 | tail -n 5 || die "test-backend-ops -o MUL_MAT failed on Vulkan0: the Vulkan backend computes wrong results or does not start (the lines above)"
  hf_verified "llama.cpp $LLAMACPP_REF: test-backend-ops -o MUL_MAT passed on Vulkan0 (matches the CPU backend)"
fi

model=${LLAMA_MODEL:-}
if [[ -z "$model" ]]; then
  log_info "no model given, so no benchmark. To measure prompt and generation speed:"
  log_info "  haloforge build --track llamacpp-vulkan --only verify --set LLAMA_MODEL=/path/to/model.gguf"
  hf_not_verified "llama-bench: no model given (LLAMA_MODEL is empty), so no speed measured"
  hf_verify_end
  exit 0
fi
[[ -f "$model" ]] || is_dry_run || die "LLAMA_MODEL=$model: no such file"
model_dir=$(dirname "$model")
[[ -d "$model_dir" ]] && model_dir=$(cd "$model_dir" && pwd)
log_step "llama-bench on $(basename "$model") (Vulkan, all layers on the GPU)"
out=$HALOFORGE_RUN_DIR/llama-bench.md
bench=("$eng" run --rm "${dri[@]}" -v "$model_dir:/models:ro,z" "$VULKAN_IMAGE"
  llama-bench -m "/models/$(basename "$model")" -ngl 99 -p 512 -n 128)
if is_dry_run; then
  run "${bench[@]}"
  exit 0
fi
mkdir -p "$HALOFORGE_RUN_DIR"
run "${bench[@]}" | tee "$out"
results=$(awk -f "$HF_SCRIPT_DIR/parse_llama_bench.awk" "$out") \
  || die "llama-bench printed no results (see $out)"
backends=$(awk -f "$HF_SCRIPT_DIR/bench_backends.awk" "$out") || backends=unknown
gpu_backend "$backends" || die "llama-bench ran on $backends only, not on the GPU: Vulkan found no usable device in the image (see $out)"
report_bench "$results" "$model" "$(state_dir_for llamacpp-vulkan)/bench.tsv"
hf_verified "llama-bench ran $(basename "$model") on the $backends backend ($(tr '\t\n' '= ' <<<"$results" | sed 's/ $//') tokens/s)"
hf_verify_end

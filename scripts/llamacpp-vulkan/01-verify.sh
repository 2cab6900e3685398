#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# llamacpp-vulkan, step "verify": Vulkan sees the GPU through RADV inside the image, and
# ggml's own test-backend-ops -o MUL_MAT -b Vulkan0 tests that device and passes (the Vulkan
# matrix multiplications match the CPU backend: proof without a model); with LLAMA_MODEL set,
# llama-bench runs on -dev Vulkan0 with JSON output, its rows must carry device evidence (not
# the backends column, which lists what is compiled in: lib/llama_gpu_evidence.py), and its
# prompt (pp) and generation (tg) tokens/s are saved to
# $HALOFORGE_STATE_DIR/llamacpp-vulkan/bench.tsv; and its answers: llama-server on Vulkan0 in
# the image answers haloforge verify's prompt set, compared with haloforge's reference for the
# same GGUF on the image's CPU backend (lib/llama.sh llama_answers, recorded once and kept):
# right proves the model computes on the GPU what it does on the CPU; WRONG OUTPUT fails.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
# shellcheck source=../lib/llama.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/llama.sh"
# shellcheck source=./report.sh
. "$(dirname "${BASH_SOURCE[0]}")/report.sh"
hf_init "$@"

require_env VULKAN_IMAGE
is_dry_run || require python3
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
  # The whole output is read: "Backend Vulkan0: OK" and "N/N tests passed" with N > 0. A
  # device that is not there is only "Skipping", and a filter that matches nothing passes
  # "0/0", both with exit 0 (tests/test-backend-ops.cpp).
  mkdir -p "$HALOFORGE_RUN_DIR"
  opslog=$HALOFORGE_RUN_DIR/test-backend-ops.log
  rc=0
  run "${ops[@]}" >"$opslog" 2>&1 || rc=$?
  tail -n 12 "$opslog"
  log_info "(the whole output: $opslog)"
  ((rc == 0)) || die "test-backend-ops -o MUL_MAT failed on Vulkan0 (exit $rc): the Vulkan backend computes wrong results or does not start (see $opslog)"
  llama_gpu_evidence backend-ops "$opslog" --device Vulkan0 || die "$EVIDENCE_WHY (see $opslog)"
  hf_verified "llama.cpp $LLAMACPP_REF: $EVIDENCE_SUMMARY (matches the CPU backend)"
fi

model=${LLAMA_MODEL:-}
if [[ -z "$model" ]]; then
  log_info "no model given, so no benchmark. To measure prompt and generation speed:"
  log_info "  haloforge build --track llamacpp-vulkan --only verify --set LLAMA_MODEL=/path/to/model.gguf"
  hf_not_verified "llama-bench: no model given (LLAMA_MODEL is empty), so no speed measured and no model's answers compared (test-backend-ops above is the numerical proof)"
  hf_verify_end
  exit 0
fi
[[ -f "$model" ]] || is_dry_run || die "LLAMA_MODEL=$model: no such file"
model_dir=$(dirname "$model")
[[ -d "$model_dir" ]] && model_dir=$(cd "$model_dir" && pwd)
log_step "llama-bench on $(basename "$model") (Vulkan, all layers on the GPU, flash attention, no mmap)"
out=$HALOFORGE_RUN_DIR/llama-bench.json
# Flash attention on and no memory mapping, as Strix Halo owners run it (kyuz0's toolboxes
# README), so the numbers compare with theirs; the no-mmap switch is the one this build's
# llama-bench lists (-mmp 0, or -lm none on builds that renamed it).
if is_dry_run; then
  run "$eng" run --rm "$VULKAN_IMAGE" llama-bench --help
  nommap=(-mmp 0)
  log_info "[dry-run] the no-mmap switch is the one llama-bench --help lists: -mmp 0, or -lm none on newer builds"
else
  mapfile -t nommap < <("$eng" run --rm "$VULKAN_IMAGE" llama-bench --help 2>&1 | llama_nommap_flags || true)
  ((${#nommap[@]} > 0)) || log_warn "this llama-bench lists no no-mmap switch: the model is memory-mapped"
fi
bench=("$eng" run --rm "${dri[@]}" -v "$model_dir:/models:ro,z" "$VULKAN_IMAGE"
  llama-bench -m "/models/$(basename "$model")" -ngl 99 -fa 1 "${nommap[@]}" -p 512 -n 128 -o json -dev Vulkan0)
# The answers: llama-server in the image, on the host's network so haloforge verify reaches it
# on 127.0.0.1, the same model and flags as the benchmark.
LLAMA_SERVER_PREFIX=("$eng" run --rm --name '{name}' --network host "${dri[@]}" -v "$model_dir:/models:ro,z" "$VULKAN_IMAGE")
server_nommap=(--no-mmap)
is_dry_run || mapfile -t server_nommap < <("$eng" run --rm "$VULKAN_IMAGE" llama-server --help 2>&1 | llama_nommap_flags || true)
answers() {
  if llama_answers "$model" "/models/$(basename "$model")" -ngl 99 -fa on --device Vulkan0 "${server_nommap[@]}"; then
    hf_verified "answers on Vulkan0: $ANSWERS_LINE"
  elif [[ $ANSWERS_VERDICT == wrong ]]; then
    hf_not_verified "answers on Vulkan0: $ANSWERS_LINE"
    die "answers on Vulkan0: $ANSWERS_LINE"
  else
    hf_not_verified "answers on Vulkan0: $ANSWERS_LINE"
  fi
}
if is_dry_run; then
  run "${bench[@]}"
  answers
  exit 0
fi
mkdir -p "$HALOFORGE_RUN_DIR"
# run would print its "+ command" line into the JSON: print it here, then run the command.
log_info "+ $(quote_cmd "${bench[@]}")"
"${bench[@]}" >"$out" || die "llama-bench failed on Vulkan0 (the lines above; an \"invalid device: Vulkan0\" means Vulkan found no GPU in the image)"
cat "$out"
llama_gpu_evidence bench "$out" --backend Vulkan --device Vulkan0 \
  || die "$EVIDENCE_WHY (see $out)"
report_bench "$EVIDENCE_RESULTS" "$model" "$(state_dir_for llamacpp-vulkan)/bench.tsv"
hf_verified "llama-bench ran $(basename "$model"): $EVIDENCE_SUMMARY"
answers
hf_verify_end

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# source-stable, step "verify": the image carries a label for every pin it was built from,
# and on the GPU torch reports the target, launches a kernel and imports vllm.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
hf_init "$@"

require_env SOURCE_IMAGE GPU_TARGET
eng=$(engine)
log_step "Labels of $SOURCE_IMAGE"
if is_dry_run; then
  run "$eng" image inspect --format '{{json .Config.Labels}}' "$SOURCE_IMAGE"
else
  image_present "$SOURCE_IMAGE" || die "$SOURCE_IMAGE does not exist: build it first (haloforge build --track source-stable --only image)"
  # shellcheck disable=SC2016 # a Go template, not shell
  labels=$("$eng" image inspect --format '{{range $k, $v := .Config.Labels}}{{println $k "=" $v}}{{end}}' "$SOURCE_IMAGE")
  lacking=0
  for pin in SOURCE_BASE_IMAGE SOURCE_ROCM_VERSION PYTHON_VERSION SOURCE_TORCH_VERSION SOURCE_TORCH_INDEX_URL \
    FLASH_ATTENTION_REPO SOURCE_FLASH_ATTENTION_REF VLLM_REPO SOURCE_VLLM_REF GPU_TARGET; do
    value=$(sed -n "s/^io\.haloforge\.pin\.$pin = //p" <<<"$labels")
    if [[ -z "$value" ]]; then
      log_error "label io.haloforge.pin.$pin is missing"
      lacking=1
    else
      log_info "  $pin=$value"
      [[ "$value" == "${!pin}" ]] || log_warn "$pin: the image was built with $value, versions.env now says ${!pin} (rebuild to match)"
    fi
  done
  ((lacking == 0)) || die "$SOURCE_IMAGE lacks pin labels: it was not built by build_pipeline.sh from this checkout"
fi

log_step "Verify torch and vLLM on the GPU"
need_gpu_devices
hf_verify_begin
mapfile -t gpu < <(gpu_flags)
mapfile -t check < <(torch_check_flags)
mapfile -t vchk < <(vllm_check_flags)
hf_run_checks "$eng" run --rm "${gpu[@]}" --ipc=host "${check[@]}" "${vchk[@]}" \
  -e HALOFORGE_EXPECT_ARCH="$GPU_TARGET" \
  "$SOURCE_IMAGE" python /haloforge/verify_torch.py
hf_verify_end

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# locked-spoof, step "verify": the image must carry the spoof and the pin labels, and under
# it torch must report the spoofed target, launch a kernel, and import vllm.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
# shellcheck source=../lib/vllm.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/vllm.sh"
hf_init "$@"

require_env SPOOF_LOCKED_IMAGE
: "${SPOOF_GFX_VERSION:=11.0.0}"
eng=$(engine)
log_step "Inspect $SPOOF_LOCKED_IMAGE"
if is_dry_run; then
  run "$eng" image inspect --format '{{json .Config.Env}} {{json .Config.Labels}}' "$SPOOF_LOCKED_IMAGE"
else
  image_present "$SPOOF_LOCKED_IMAGE" || die "$SPOOF_LOCKED_IMAGE does not exist; build it: haloforge build --track locked-spoof --only image"
  envs=$("$eng" image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$SPOOF_LOCKED_IMAGE")
  baked=$(sed -n 's/^HSA_OVERRIDE_GFX_VERSION=//p' <<<"$envs")
  [[ -n "$baked" ]] || die "$SPOOF_LOCKED_IMAGE has no HSA_OVERRIDE_GFX_VERSION baked in: rebuild it"
  digest=$("$eng" image inspect --format '{{index .Config.Labels "io.haloforge.pin.SPOOF_BASE_DIGEST"}}' "$SPOOF_LOCKED_IMAGE")
  log_ok "spoof baked in: HSA_OVERRIDE_GFX_VERSION=$baked; base digest ${digest:-unknown}"
  SPOOF_GFX_VERSION=$baked
fi
spoof_risk_banner "$SPOOF_GFX_VERSION"

log_step "Verify torch and vLLM under the baked spoof"
need_gpu_devices
hf_verify_begin
mapfile -t gpu < <(gpu_flags)
mapfile -t check < <(torch_check_flags)
mapfile -t vchk < <(vllm_check_flags)
hf_run_checks "$eng" run --rm "${gpu[@]}" --ipc=host "${check[@]}" "${vchk[@]}" \
  -e HALOFORGE_EXPECT_ARCH="$(spoofed_target "$SPOOF_GFX_VERSION")" \
  "$SPOOF_LOCKED_IMAGE" python3 /haloforge/verify_torch.py
# What vLLM computes under the spoof: its answers, eager and compiled (lib/vllm.sh).
VLLM_ANSWERS_PY=/haloforge/verify_answers.py vllm_answers "$eng" run --rm "${gpu[@]}" --ipc=host "${check[@]}" "${vchk[@]}" \
  --entrypoint python3 "$SPOOF_LOCKED_IMAGE" || die "vLLM's answers are wrong under the spoof (the WRONG OUTPUT above)"
hf_verify_end

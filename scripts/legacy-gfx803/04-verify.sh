#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# legacy-gfx803, step "verify": assemble GFX803_IMAGE (the torch stage plus both wheels, all
# cached) and check on the Polaris card: torch sees gfx803 and runs a kernel, torchvision
# and torchaudio import against the same torch.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
# shellcheck source=./common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
hf_init "$@"

require_env GFX803_IMAGE
log_step "Assemble $GFX803_IMAGE"
build_stage final "$GFX803_IMAGE"

log_step "Verify on the gfx803 card"
need_gpu_devices
eng=$(engine)
mapfile -t gpu < <(gpu_flags)
mapfile -t check < <(torch_check_flags)
hf_verify_begin
hf_run_checks "$eng" run --rm "${gpu[@]}" "${check[@]}" -e HALOFORGE_EXPECT_ARCH=gfx803 \
  "$GFX803_IMAGE" python /haloforge/verify_torch.py
# torchvision's nms on the GPU keeps the higher box only: a real kernel of the vision wheel.
hf_run_checks "$eng" run --rm "${gpu[@]}" "$GFX803_IMAGE" python -c \
  'import torch, torchvision, torchaudio; from torchvision.ops import nms; b = torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11]], dtype=torch.float, device="cuda"); k = nms(b, torch.tensor([0.9, 0.8], device="cuda"), 0.5).tolist(); print("torchaudio", torchaudio.__version__); assert k == [0], k; print("verified: torchvision", torchvision.__version__, "ran nms on the gfx803 GPU")'
hf_verify_end
is_dry_run || log_ok "PyTorch for gfx803 works: $eng run --rm -it ${gpu[*]} $GFX803_IMAGE"

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# therock-toolbox step "toolbox": create the distrobox box the later steps build in.
# Runs on the host, as your normal user (distrobox refuses root).
#
# Pins: TOOLBOX_NAME, TOOLBOX_IMAGE.
# Options (environment):
#   HALOFORGE_ALLOW_NO_GPU=1    go on without /dev/kfd (tests, CI): the box gets no GPU devices
#   HALOFORGE_DISTROBOX_ROOT=1  rootful podman through sudo (distrobox --root)
#   HALOFORGE_RECREATE_BOX=1    remove a box that was created from another image, then recreate it
# Idempotent: a box with the right image is reused as it is.

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
hf_init "$@"
require_env TOOLBOX_NAME TOOLBOX_IMAGE

# check_user: distrobox (and rootless podman) must run as the user who will use the box.
check_user() {
  [[ $(id -u) -ne 0 ]] && return 0
  local msg="running as root: distrobox refuses that (\"Running distrobox-create as sudo is not supported\"). Run haloforge as your normal user; for rootful podman set HALOFORGE_DISTROBOX_ROOT=1 and distrobox uses sudo itself (distrobox create --root)"
  if is_dry_run; then
    log_warn "$msg"
    return 0
  fi
  die "$msg"
}

# device_flags: sets FLAGS to the flags that hand the GPU to the box: /dev/kfd (compute) and
# /dev/dri (render nodes) through box_gpu_flags (lib/box.sh: keep-groups under podman, the
# numeric render and video gids under docker). A host without /dev/kfd stops here.
device_flags() {
  FLAGS=()
  local no_gpu=${HALOFORGE_ALLOW_NO_GPU:-0}
  if ! host_has_dev /dev/kfd && [[ "$no_gpu" != 1 ]]; then
    if is_dry_run; then
      log_warn "/dev/kfd is missing on this machine: a real run stops here (HALOFORGE_ALLOW_NO_GPU=1 goes on without the GPU)"
    else
      die "/dev/kfd is missing: the amdgpu kernel driver (KFD) is not loaded or this is not a ROCm-capable GPU; run haloforge doctor. To create the box without a GPU anyway (tests), set HALOFORGE_ALLOW_NO_GPU=1"
    fi
  fi
  if [[ "$no_gpu" == 1 ]]; then
    log_warn "HALOFORGE_ALLOW_NO_GPU=1: creating the box WITHOUT --device /dev/kfd --device /dev/dri; ROCm will not see a GPU in it"
    return 0
  fi
  box_gpu_flags /dev/kfd /dev/dri
  FLAGS=("${BOX_FLAGS[@]}")
}

# warn_missing_devices: a reused box made without the GPU flags (an earlier
# HALOFORGE_ALLOW_NO_GPU=1 run, or by hand) may not reach /dev/kfd as the user; say how to
# recreate it rather than fail later with "No HIP GPUs are available".
warn_missing_devices() {
  ((${#FLAGS[@]})) || return 0
  local devs
  devs=$(box_devices "$TOOLBOX_NAME") || return 0
  if [[ " $devs " != *" /dev/kfd "* ]]; then
    log_warn "box $TOOLBOX_NAME was created without --device /dev/kfd (an earlier HALOFORGE_ALLOW_NO_GPU=1 run?); if ROCm sees no GPU inside it, run distrobox rm$(box_root_word) --force $TOOLBOX_NAME and this step again"
  fi
}

log_step "Toolbox $TOOLBOX_NAME from $TOOLBOX_IMAGE"
check_user
device_flags
require_box_tools

if box_reuse_or_create "$TOOLBOX_IMAGE" TOOLBOX_IMAGE TOOLBOX_NAME "${FLAGS[@]}"; then
  warn_missing_devices
  hf_fact_image "$TOOLBOX_IMAGE"
  exit 0
fi

log_step "First start of $TOOLBOX_NAME (distrobox sets up the user inside)"
in_box true
grant_box_sudo
if ! is_dry_run; then
  box_exists "$TOOLBOX_NAME" || die "distrobox create finished but podman has no container $TOOLBOX_NAME"
  log_ok "box $TOOLBOX_NAME ready: distrobox enter$(box_root_word) $TOOLBOX_NAME"
fi
hf_fact_image "$TOOLBOX_IMAGE"

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# llamacpp-distro step "toolbox": create the distrobox box the distribution's llama.cpp
# lives in. Runs on the host, as your normal user (distrobox refuses root).
#
# Pins: LLAMACPP_DISTRO_BOX, LLAMACPP_DISTRO_IMAGE (Debian sid, Ubuntu 26.04 or Fedora).
# Options (environment):
#   HALOFORGE_ALLOW_NO_GPU=1    go on without /dev/dri and /dev/kfd (tests, CI)
#   HALOFORGE_DISTROBOX_ROOT=1  rootful podman through sudo (distrobox --root)
#   HALOFORGE_RECREATE_BOX=1    replace a box that was created from another image
# Idempotent: a box with the right image is reused as it is.
# Vulkan needs only /dev/dri; HIP also needs /dev/kfd: each is passed when the host has it.

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=./lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
hf_init "$@"
require_env LLAMACPP_DISTRO_BOX LLAMACPP_DISTRO_IMAGE
distro_init

if [[ $(id -u) -eq 0 ]]; then
  msg="running as root: distrobox refuses that (\"Running distrobox-create as sudo is not supported\"). Run haloforge as your normal user; for rootful podman set HALOFORGE_DISTROBOX_ROOT=1"
  is_dry_run || die "$msg"
  log_warn "$msg"
fi

# device_flags: FLAGS gets the GPU devices this host has, through box_gpu_flags (lib/box.sh:
# keep-groups under podman, the numeric render and video gids under docker, whose
# --group-add resolves names in the image's /etc/group), so the user's groups still open them.
device_flags() {
  FLAGS=()
  local dev have=()
  for dev in /dev/dri /dev/kfd; do
    host_has_dev "$dev" && have+=("$dev")
  done
  if ((${#have[@]} == 0)); then
    if [[ "${HALOFORGE_ALLOW_NO_GPU:-0}" == 1 ]]; then
      log_warn "HALOFORGE_ALLOW_NO_GPU=1: this host has no /dev/dri and no /dev/kfd; the box gets no GPU (Vulkan will only find llvmpipe, a CPU device)"
      return 0
    fi
    is_dry_run || die "neither /dev/dri nor /dev/kfd exists: the amdgpu driver is not loaded (or nomodeset is on the kernel command line); run haloforge doctor. For a test without a GPU set HALOFORGE_ALLOW_NO_GPU=1"
    log_warn "no /dev/dri or /dev/kfd on this machine (a real run stops here)"
    return 0
  fi
  box_gpu_flags "${have[@]}"
  FLAGS=("${BOX_FLAGS[@]}")
}

log_step "Box $TOOLBOX_NAME from $LLAMACPP_DISTRO_IMAGE"
device_flags
require_box_tools
if box_reuse_or_create "$LLAMACPP_DISTRO_IMAGE" LLAMACPP_DISTRO_IMAGE LLAMACPP_DISTRO_BOX "${FLAGS[@]}"; then
  hf_fact_image "$LLAMACPP_DISTRO_IMAGE"
  exit 0
fi

# explain_first_start: a failed first start, with the cause when it is a known one.
explain_first_start() {
  local -a mgr
  read -r -a mgr <<<"$(box_manager)"
  if "${mgr[@]}" logs "$TOOLBOX_NAME" 2>&1 | grep -q 'invalid password hash'; then
    die "distrobox $(distrobox version 2>/dev/null | awk '{print $NF}') cannot set up your user in $LLAMACPP_DISTRO_IMAGE: its chpasswd rejects the random password older distrobox seeds (\"chpasswd: invalid password hash\", fixed in distrobox 1.8.2). Update distrobox to 1.8.2 or newer, then: distrobox rm$(box_root_word) --force $TOOLBOX_NAME and run this step again"
  fi
  die "the first start of $TOOLBOX_NAME failed; its log: $(box_manager) logs $TOOLBOX_NAME"
}

log_step "First start of $TOOLBOX_NAME (distrobox sets up the user inside)"
in_box true || explain_first_start
# 01 installs with sudo, unattended: a rootful box needs passwordless sudo first.
grant_box_sudo
if ! is_dry_run; then
  box_exists "$TOOLBOX_NAME" || die "distrobox create finished but there is no container $TOOLBOX_NAME"
  log_ok "box $TOOLBOX_NAME ready: distrobox enter$(box_root_word) $TOOLBOX_NAME"
fi
hf_fact_image "$LLAMACPP_DISTRO_IMAGE"

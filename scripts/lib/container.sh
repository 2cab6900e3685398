# shellcheck shell=bash
# Container helpers shared by the image-based tracks (vllm-image, source-stable, the spoof
# tracks, llamacpp-vulkan, ollama, legacy-gfx803, llamacpp-rocm). Sourced after
# lib/common.sh; generic enough to move into scripts/lib/ as it is.
#
# HALOFORGE_CONTAINER_ENGINE=podman|docker overrides the choice (podman by default, as in
# the Red Hat aligned seed; docker when it is the only engine installed).

# engine: the container engine command.
engine() {
  if [[ -n "${HALOFORGE_CONTAINER_ENGINE:-}" ]]; then
    printf '%s\n' "$HALOFORGE_CONTAINER_ENGINE"
  elif command -v podman >/dev/null 2>&1; then
    printf 'podman\n'
  elif command -v docker >/dev/null 2>&1; then
    printf 'docker\n'
  elif is_dry_run; then
    # A dry run shows the commands even where no engine is installed yet.
    printf 'podman\n'
  else
    die "no container engine: install podman ($(_hf_install_hint podman)) or docker"
  fi
}

# engine_is_podman: podman-only flags (keep-groups) depend on it.
engine_is_podman() { [[ "$(basename "$(engine)")" == podman* ]]; }

# gpu_flags: the run flags a ROCm container needs (docs/facts.md, container-engine): both device
# nodes, the caller's groups (rootless podman ignores named groups, and "render" may not
# exist in the image), and no seccomp filter (ROCm's ioctl use trips the default profile).
gpu_flags() {
  printf '%s\n' --device /dev/kfd --device /dev/dri
  if engine_is_podman; then
    printf '%s\n' --group-add keep-groups
  else
    local g gid
    for g in video render; do
      gid=$(getent group "$g" 2>/dev/null | cut -d: -f3) || true
      [[ -n "$gid" ]] && printf '%s\n' --group-add "$gid"
    done
  fi
  printf '%s\n' --security-opt seccomp=unconfined
}

# dri_flags: Vulkan needs only the render nodes, no /dev/kfd.
dri_flags() {
  printf '%s\n' --device /dev/dri
  if engine_is_podman; then
    printf '%s\n' --group-add keep-groups
  fi
}

# image_present IMAGE: true when the engine has the image locally (read-only probe, so it
# also runs in a dry run; false when no engine is installed).
image_present() {
  local eng
  eng=$(engine)
  command -v "$eng" >/dev/null 2>&1 || return 1
  "$eng" image inspect "$1" >/dev/null 2>&1
}

# image_digest IMAGE: the repo digest the local image was pulled as (empty when unknown):
# facts.sh's choice, so that docker's .RepoDigests, which may list another repository's
# digest first, gives the image's own (podman's .Digest when it has no other).
image_digest() {
  local eng
  eng=$(engine)
  command -v "$eng" >/dev/null 2>&1 || return 0
  _hf_image_digest "$1" "$eng"
}

# pull_image IMAGE: pull unless present; registries time out, so retry a few times. The
# digest the image was pulled as is recorded (hf_fact_image), and an image this step pulled
# as haloforge's (hf_created_image).
pull_image() {
  local image=$1 had=0
  if ! is_dry_run && image_present "$image"; then
    log_ok "image already present: $image"
    had=1
  else
    retry -n 3 -d 15 -- "$(engine)" pull "$image"
  fi
  hf_fact_image "$image" "$(engine)"
  ((had)) || hf_created_image "$image" pulled "$(engine)"
}

# need_gpu_devices: a step that runs ROCm in a container needs /dev/kfd and /dev/dri on the
# host; say so plainly instead of letting the runtime print "no ROCm-capable device".
need_gpu_devices() {
  local dev missing=()
  for dev in /dev/kfd /dev/dri; do
    [[ -e "$dev" ]] || missing+=("$dev")
  done
  ((${#missing[@]} == 0)) && return 0
  if is_dry_run; then
    log_warn "missing on this host: ${missing[*]} (a real run stops here)"
    return 0
  fi
  # The test option of the therock-toolbox track: go on without a GPU, loudly.
  if [[ "${HALOFORGE_ALLOW_NO_GPU:-0}" == 1 ]]; then
    log_warn "HALOFORGE_ALLOW_NO_GPU=1: going on without ${missing[*]}; GPU commands will fail"
    return 0
  fi
  die "missing on this host: ${missing[*]}: no ROCm-capable device is detected. Load amdgpu (no nomodeset on the kernel command line) and check 'haloforge doctor'"
}

# state_dir_for TRACK: the track's directory under the state dir (created unless dry run).
state_dir_for() {
  local dir=$HALOFORGE_STATE_DIR/$1
  is_dry_run || mkdir -p "$dir"
  printf '%s\n' "$dir"
}

# torch_check_flags: mount the shared checks (verify_torch.py, verify_vllm.py) into a
# container at /haloforge/.
torch_check_flags() {
  local f
  for f in verify_torch.py verify_vllm.py; do
    printf '%s\n' -v "$HALOFORGE_SCRIPTS_DIR/lib/$f:/haloforge/$f:ro,z"
  done
}

# vllm_check_flags: what verify_vllm.py needs in a container: the model to generate with
# (VERIFY_MODEL), the host's Hugging Face cache (a model downloads once) and HF_TOKEN.
vllm_check_flags() {
  local cache=${HF_HOME:-${HOME:-/root}/.cache/huggingface}
  is_dry_run || mkdir -p "$cache"
  printf '%s\n' -e HALOFORGE_CHECK_VLLM=1 -e "HALOFORGE_VERIFY_MODEL=${VERIFY_MODEL:-}" -e HF_TOKEN \
    -v "$cache:/root/.cache/huggingface:z"
}

# spoof_risk_banner VERSION: what HSA_OVERRIDE_GFX_VERSION=VERSION means on RDNA 3.5, shown
# before anything runs under it (the hsa-override-spoof-crash failure).
spoof_risk_banner() {
  log_warn "HSA_OVERRIDE_GFX_VERSION=$1: the runtime will report this GPU as $(spoofed_target "$1") and load kernels built for it, not for gfx1151."
  log_warn "RDNA3 kernels on RDNA 3.5 can die with 'Illegal instruction' or a GPU memory access fault, at load or mid-run. A stop-gap: prefer the therock-toolbox track (native gfx1151)."
}

# spoofed_target VERSION: the gfx name an HSA_OVERRIDE_GFX_VERSION value makes the runtime
# report: major in decimal, minor and stepping in hex (docs/facts.md), 11.0.0 -> gfx1100.
spoofed_target() {
  local major minor step
  IFS=. read -r major minor step <<<"$1"
  [[ "$major" =~ ^[0-9]+$ && "$minor" =~ ^[0-9]+$ && "$step" =~ ^[0-9]+$ ]] \
    || die "HSA_OVERRIDE_GFX_VERSION must look like 11.0.0, got '$1'"
  printf 'gfx%d%x%x\n' "$major" "$minor" "$step"
}

# confirm_or_proceed QUESTION: on a terminal, ask and stop unless the answer is yes; when
# nothing can answer (the wizard's runner, CI, a pipe) or HALOFORGE_ASSUME_YES=1, go on:
# the warning above it is already in the log.
confirm_or_proceed() {
  if is_dry_run || [[ "${HALOFORGE_ASSUME_YES:-0}" == 1 ]] || [[ ! -t 0 || ! -t 1 ]]; then
    log_info "$1 proceeding (non-interactive)"
    return 0
  fi
  local answer=''
  read -r -p "$1 [y/N] " answer || true
  [[ "$answer" =~ ^[Yy]([Ee][Ss])?$ ]] || die "stopped: nothing was run" 1
}

# containerfile PATH-IN-TOOLBOX: the absolute path of a container definition, checked.
containerfile() {
  local f=$HALOFORGE_TOOLBOX_DIR/$1
  [[ -f "$f" ]] || is_dry_run || die "container definition not found: $f (HALOFORGE_TOOLBOX_DIR=$HALOFORGE_TOOLBOX_DIR)"
  printf '%s\n' "$f"
}

# build_args NAME...: --build-arg NAME=VALUE for each pin, from the environment, so a
# --set override reaches the image and its io.haloforge.pin.* labels alike.
build_args() {
  local name
  for name in "$@"; do
    require_env "$name"
    printf '%s\n' --build-arg "$name=${!name}"
  done
}

# build_image FILE TAG CONTEXT [EXTRA BUILD FLAGS...]: build TAG from toolbox/FILE; the
# creation time goes in as a label because a Containerfile cannot compute it, and the run's
# owner label (hf_owner_flags), so that haloforge clean knows the image is haloforge's.
build_image() {
  local file tag=$2 context=$3
  local -a own
  file=$(containerfile "$1")
  shift 3
  mapfile -t own < <(hf_owner_flags)
  run "$(engine)" build -f "$file" -t "$tag" \
    --label "org.opencontainers.image.created=$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${own[@]}" \
    "$@" "$context"
  hf_created_image "$tag" built "$(engine)"
}

# fact_image_commit IMAGE FILE REPO REF: record the commit a container build checked out,
# from the file the Containerfile wrote it to inside IMAGE (git rev-parse HEAD > FILE).
fact_image_commit() {
  local image=$1 file=$2 repo=$3 ref=$4 sha
  is_dry_run && return 0
  sha=$("$(engine)" run --rm --network none --entrypoint cat "$image" "$file" 2>/dev/null) || sha=''
  if [[ ! "$sha" =~ ^[0-9a-f]{40}$ ]]; then
    log_warn "no commit in $image:$file: not recorded"
    return 0
  fi
  log_ok "resolved: $repo $ref is $sha (in $image)"
  _hf_fact git "$repo" "$ref" "$sha"
}

# fact_base_image IMAGE: record the digest of the base image a build pulled (its FROM): what
# the image was built on (the image built here has no registry digest of its own).
fact_base_image() {
  hf_fact_image "$1" "$(engine)"
}

# report_gtt: how much memory the iGPU may use (the GTT pool), with the host fix when it is
# the kernel's default of about half the RAM. Read-only.
report_gtt() {
  local f gib
  for f in /sys/class/drm/card*/device/mem_info_gtt_total; do
    [[ -r "$f" ]] || continue
    gib=$(awk '{ printf "%d", $1 / 1073741824 }' "$f")
    log_info "GPU memory (GTT) the kernel allows: ${gib} GiB ($f)"
    if ((gib < 64)); then
      log_info "to give the GPU more: kernel parameter ttm.pages_limit=<GiB x 262144> (96 GiB = 25165824, 124 GiB = 32505856), BIOS carve-out at 512 MB; 'haloforge doctor' checks both"
    fi
    return 0
  done
  log_info "GTT size unknown here (no /sys/class/drm/card*/device/mem_info_gtt_total)"
}

# ollama_gpu_line [LIBRARY]: read Ollama's server log on stdin; print the last line that
# reports a GPU of LIBRARY in use (msg="inference compute" … library=ROCm, or Vulkan: the
# names of ml.DeviceInfo.Library; default ROCm); fail when there is none, e.g. only
# "id=cpu library=cpu" (it fell back to the CPU).
ollama_gpu_line() {
  awk -v lib="$(tr '[:upper:]' '[:lower:]' <<<"${1:-rocm}")" '
		/inference compute/ && tolower($0) ~ ("library=\"?" lib "([\" ]|$)") { line = $0 }
		END { if (line == "") exit 1; print line }
	'
}

# ollama_engine: the image, device flags and variables of OLLAMA_BACKEND, in the globals
# OLLAMA_RUN_IMAGE, OLLAMA_DEVICE_FLAGS (array) and OLLAMA_ENGINE_ENV (array of NAME=VALUE).
# rocm: the -rocm image with /dev/kfd and /dev/dri. vulkan: the plain image, which carries
# the Vulkan engine (the -rocm one does not: Ollama's Dockerfile, stages amd64 and rocm),
# with /dev/dri only, OLLAMA_VULKAN=1 and OLLAMA_IGPU_ENABLE=1: Ollama v0.32.15 drops an
# integrated GPU found through Vulkan unless asked ("dropping integrated GPU; to enable, set
# OLLAMA_IGPU_ENABLE=1", discover/runner.go), while it admits gfx1151 on ROCm by default.
ollama_engine() {
  # shellcheck disable=SC2034 # read by the callers
  case ${OLLAMA_BACKEND:-rocm} in
    rocm)
      require_env OLLAMA_IMAGE
      OLLAMA_RUN_IMAGE=$OLLAMA_IMAGE OLLAMA_ENGINE_ENV=()
      mapfile -t OLLAMA_DEVICE_FLAGS < <(gpu_flags)
      ;;
    vulkan)
      require_env OLLAMA_VULKAN_IMAGE
      OLLAMA_RUN_IMAGE=$OLLAMA_VULKAN_IMAGE OLLAMA_ENGINE_ENV=(OLLAMA_VULKAN=1 OLLAMA_IGPU_ENABLE=1)
      mapfile -t OLLAMA_DEVICE_FLAGS < <(dri_flags)
      ;;
    *) die "OLLAMA_BACKEND must be rocm or vulkan, got '$OLLAMA_BACKEND'" 2 ;;
  esac
}

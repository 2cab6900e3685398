#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# build_pipeline.sh (source-stable, step "image"): build toolbox/Containerfile.source-stable,
# vLLM and flash-attention from source on Fedora 43 against PyTorch 2.8 / ROCm 6.4, with
# every version and git hash as an image label (seed spec, option B). Not for gfx1151: a
# gfx115x target with a ROCm 6.x torch index is refused before anything is downloaded.
#
# Versions and hashes come from arguments, else the environment, else versions.env: the
# runner passes no arguments, so a pipeline run builds exactly the pinned set.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"

usage() {
  cat <<-'USAGE'
		Usage: build_pipeline.sh [options]

		Build the source-stable image. Every option defaults to its pin in versions.env
		(shown in brackets as the pin's name); an option overrides it for this build only.

		  --base-image REF         Fedora base image            [SOURCE_BASE_IMAGE]
		  --rocm-version X.Y.Z     ROCm series Fedora must ship [SOURCE_ROCM_VERSION]
		  --python-version X.Y     Python of the venv           [PYTHON_VERSION]
		  --torch-version X.Y.Z    PyTorch version              [SOURCE_TORCH_VERSION]
		  --torch-index-url URL    PyTorch ROCm wheel index     [SOURCE_TORCH_INDEX_URL]
		  --vllm-repo URL          vLLM git repository          [VLLM_REPO]
		  --vllm-ref SHA           vLLM commit                  [SOURCE_VLLM_REF]
		  --fa-repo URL            flash-attention repository   [FLASH_ATTENTION_REPO]
		  --fa-ref SHA             flash-attention commit       [SOURCE_FLASH_ATTENTION_REF]
		  --gpu-target GFX         GPU target to build for      [GPU_TARGET]
		  --image NAME             image to build               [SOURCE_IMAGE]
		  --jobs N                 parallel compile jobs        [from RAM: about 4 GiB each]
		  --engine podman|docker   container engine             [podman when installed]
		  --no-cache               rebuild every layer
		  -h, --help               this help

		Example: build_pipeline.sh --vllm-ref 01efc7ef781391e744ed08c3292817a773d654e6 --image localhost/vllm:test
	USAGE
}

# option_pin OPTION: the pin an option overrides (fails for an unknown option).
option_pin() {
  case $1 in
    --base-image) echo SOURCE_BASE_IMAGE ;;
    --rocm-version) echo SOURCE_ROCM_VERSION ;;
    --python-version) echo PYTHON_VERSION ;;
    --torch-version) echo SOURCE_TORCH_VERSION ;;
    --torch-index-url) echo SOURCE_TORCH_INDEX_URL ;;
    --vllm-repo) echo VLLM_REPO ;;
    --vllm-ref) echo SOURCE_VLLM_REF ;;
    --fa-repo) echo FLASH_ATTENTION_REPO ;;
    --fa-ref | --flash-attention-ref) echo SOURCE_FLASH_ATTENTION_REF ;;
    --gpu-target) echo GPU_TARGET ;;
    --image) echo SOURCE_IMAGE ;;
    *) return 1 ;;
  esac
}
BUILD_PINS=(SOURCE_BASE_IMAGE SOURCE_ROCM_VERSION PYTHON_VERSION SOURCE_TORCH_VERSION
  SOURCE_TORCH_INDEX_URL FLASH_ATTENTION_REPO SOURCE_FLASH_ATTENTION_REF VLLM_REPO
  SOURCE_VLLM_REF GPU_TARGET)

# parse_args ARGS...: set the overridden pins (exported, so they beat versions.env), JOBS
# and NO_CACHE; exit 2 on a bad option, as haloforge does for bad usage.
parse_args() {
  local opt val pin
  JOBS='' NO_CACHE=0
  while (($#)); do
    opt=$1
    case $opt in
      -h | --help)
        usage
        exit 0
        ;;
      --no-cache)
        NO_CACHE=1
        shift
        continue
        ;;
      --*=*)
        val=${opt#*=} opt=${opt%%=*}
        shift
        ;;
      --*)
        (($# >= 2)) || usage_error "$opt needs a value"
        val=$2
        shift 2
        ;;
      *) usage_error "unexpected argument: $opt" ;;
    esac
    [[ -n "$val" ]] || usage_error "$opt needs a value"
    case $opt in
      --jobs)
        [[ "$val" =~ ^[1-9][0-9]*$ ]] || usage_error "--jobs wants a positive number, got '$val'"
        JOBS=$val
        ;;
      --engine)
        [[ "$val" == podman || "$val" == docker ]] || usage_error "--engine is podman or docker"
        export HALOFORGE_CONTAINER_ENGINE=$val
        ;;
      *)
        pin=$(option_pin "$opt") || usage_error "unknown option: $opt"
        printf -v "$pin" '%s' "$val"
        export "${pin?}"
        ;;
    esac
  done
}

usage_error() {
  log_error "$1"
  printf 'Try: %s --help\n' "${0##*/}" >&2
  _HF_DYING=1
  exit 2
}

# check_values: the pins' shapes, before hours of building.
check_values() {
  local name
  for name in SOURCE_VLLM_REF SOURCE_FLASH_ATTENTION_REF; do
    if [[ ! "${!name}" =~ ^[0-9a-f]{40}$ ]]; then
      [[ "${!name}" =~ ^[A-Za-z0-9._/-]+$ ]] || usage_error "$name='${!name}' is not a git ref"
      # vLLM re-created its v0.10.2 tag in Oct 2025: only a commit is reproducible.
      log_warn "$name=${!name} is not a commit SHA: tags can be re-created and branches move"
    fi
  done
  [[ "$SOURCE_TORCH_VERSION" =~ ^[0-9]+\.[0-9]+(\.[0-9]+)?$ ]] || usage_error "SOURCE_TORCH_VERSION='$SOURCE_TORCH_VERSION' is not a version like 2.8.0"
  [[ "$SOURCE_ROCM_VERSION" =~ ^[0-9]+\.[0-9]+(\.[0-9]+)?$ ]] || usage_error "SOURCE_ROCM_VERSION='$SOURCE_ROCM_VERSION' is not a version like 6.4.4"
  [[ "$PYTHON_VERSION" =~ ^3\.[0-9]+$ ]] || usage_error "PYTHON_VERSION='$PYTHON_VERSION' is not like 3.12"
  [[ "$SOURCE_TORCH_INDEX_URL" =~ ^https:// ]] || usage_error "SOURCE_TORCH_INDEX_URL must be https"
  [[ "$GPU_TARGET" =~ ^gfx[0-9a-f]+$ ]] || usage_error "GPU_TARGET='$GPU_TARGET' is not a gfx target"
  no_kernels_for_target
}

# no_kernels_for_target: refuse, before any download, a target the torch index has no
# kernels for: PyTorch's ROCm 6.x wheels carry no gfx1150/gfx1151 (Strix Halo) code, which
# PyTorch added to its ROCm wheels with pytorch#167299 (2025-11-07, ROCm 7 builds), so the
# image would only stop at its arch check after gigabytes of downloads.
no_kernels_for_target() {
  case $GPU_TARGET in
    gfx115*) ;;
    *) return 0 ;;
  esac
  case ${SOURCE_TORCH_INDEX_URL%/}/ in
    */rocm6.*/) ;;
    *) return 0 ;;
  esac
  log_error "source-stable cannot build for GPU_TARGET=$GPU_TARGET with torch from $SOURCE_TORCH_INDEX_URL: PyTorch's ROCm 6.x wheels carry no gfx1150/gfx1151 kernels (added with pytorch#167299, for ROCm 7 wheels), so torch $SOURCE_TORCH_VERSION would stop at its first kernel on this GPU. For a Strix Halo use the therock-toolbox track (haloforge build --track therock-toolbox); this track builds for gfx1100, gfx1101, gfx1200, gfx1201, gfx1030, gfx942 or gfx90a (--set GPU_TARGET=gfx1100)"
  _HF_DYING=1
  exit 2
}

# build_context DIR: the few files the Containerfile copies in (nothing else, so the cache
# only breaks when they change).
build_context() {
  local dir=$1
  is_dry_run && return 0
  mkdir -p "$dir"
  cp "$HALOFORGE_SCRIPTS_DIR/lib/list_add.awk" "$HALOFORGE_SCRIPTS_DIR/lib/python-pins.txt" "$HF_SCRIPT_DIR/patch-vllm-arch.sh" \
    "$HF_SCRIPT_DIR/venv-amdsmi.sh" "$dir/"
}

main() {
  parse_args "$@"
  hf_init
  require_env SOURCE_IMAGE "${BUILD_PINS[@]}"
  check_values
  local jobs=${JOBS:-$(max_jobs)} ctx args=()
  log_step "Build $SOURCE_IMAGE: vLLM ${SOURCE_VLLM_REF:0:12} on torch $SOURCE_TORCH_VERSION, ROCm $SOURCE_ROCM_VERSION, $GPU_TARGET ($jobs jobs)"
  local name
  for name in "${BUILD_PINS[@]}"; do
    log_info "  $name=${!name}"
  done
  ctx=$HALOFORGE_CACHE_DIR/context
  build_context "$ctx"
  mapfile -t args < <(build_args "${BUILD_PINS[@]}")
  args+=(--build-arg "MAX_JOBS=$jobs")
  ((NO_CACHE)) && args+=(--no-cache)
  build_image Containerfile.source-stable "$SOURCE_IMAGE" "$ctx" "${args[@]}"
  fact_base_image "$SOURCE_BASE_IMAGE"
  fact_image_commit "$SOURCE_IMAGE" /opt/venv/vllm.commit "$VLLM_REPO" "$SOURCE_VLLM_REF"
  fact_image_commit "$SOURCE_IMAGE" /opt/venv/flash-attention.commit "$FLASH_ATTENTION_REPO" "$SOURCE_FLASH_ATTENTION_REF"
  is_dry_run && return 0
  local dir
  dir=$(state_dir_for source-stable)
  for name in "${BUILD_PINS[@]}" SOURCE_IMAGE; do
    printf '%s=%s\n' "$name" "${!name}"
  done | write_file "$dir/build.env"
  log_ok "built $SOURCE_IMAGE; the pins are in its io.haloforge.pin.* labels and in $dir/build.env"
}

main "$@"

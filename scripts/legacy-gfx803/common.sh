# shellcheck shell=bash
# Shared by the legacy-gfx803 steps: every stage of toolbox/Dockerfile_rocm64_pytorch is
# built from the same context and arguments, so each step re-uses the layers of the one
# before it (the long torch build runs once).

# gfx803_context: the build context (only cmake4-fixes.sh goes in).
gfx803_context() {
  local ctx=$HALOFORGE_CACHE_DIR/context
  if ! is_dry_run; then
    mkdir -p "$ctx"
    cp "$HF_SCRIPT_DIR/cmake4-fixes.sh" "$HALOFORGE_SCRIPTS_DIR/lib/python-pins.txt" "$ctx/"
  fi
  printf '%s\n' "$ctx"
}

# build_stage TARGET [TAG]: build one stage of Dockerfile_rocm64_pytorch.
build_stage() {
  local target=$1 tag=${2:-localhost/haloforge/gfx803-stage-$1} ctx args=()
  require_env GFX803_LOCAL_BASE_IMAGE GFX803_PYTORCH_REPO GFX803_PYTORCH_REF GFX803_VISION_REF GFX803_AUDIO_REF
  ctx=$(gfx803_context)
  mapfile -t args < <(build_args GFX803_LOCAL_BASE_IMAGE GFX803_PYTORCH_REPO GFX803_PYTORCH_REF GFX803_VISION_REF GFX803_AUDIO_REF)
  if ! is_dry_run && ! image_present "$GFX803_LOCAL_BASE_IMAGE"; then
    die "$GFX803_LOCAL_BASE_IMAGE does not exist: build it first (haloforge build --track legacy-gfx803 --only base)"
  fi
  build_image Dockerfile_rocm64_pytorch "$tag" "$ctx" --target "$target" "${args[@]}"
}

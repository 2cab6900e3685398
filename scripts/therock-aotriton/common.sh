# shellcheck shell=bash
# Shared by the therock-aotriton steps (the project's TheRock + AOTriton guide). The guide used a
# conda env; haloforge uses a plain venv so nothing but the distro's Python is needed.
# Locations (override by exporting them):
#   THEROCK_AOTRITON_VENV  the venv          [$HALOFORGE_STATE_DIR/therock-aotriton/venv]
#   THEROCK_AOTRITON_WORK  sources, builds   [$HALOFORGE_CACHE_DIR/work] (kept between runs:
#                                            that is what makes the stages resumable)

# shellcheck disable=SC2034 # the step scripts read these
aot_paths() {
  AOT_STATE=$HALOFORGE_STATE_DIR/therock-aotriton
  AOT_VENV=${THEROCK_AOTRITON_VENV:-$AOT_STATE/venv}
  AOT_WORK=${THEROCK_AOTRITON_WORK:-$HALOFORGE_CACHE_DIR/work}
  AOT_PY=$AOT_VENV/bin/python
  THEROCK_DIR=$AOT_WORK/TheRock
  PT_BUILD=$THEROCK_DIR/external-builds/pytorch
  AOT_SRC=$AOT_WORK/aotriton
  AOT_PREFIX=$AOT_SRC/build/install_dir
  PYOUT=$AOT_WORK/pyout
  AOT_ENV_FILE=$AOT_STATE/env.sh
  AOT_WHEELS=$AOT_STATE/wheels.txt
}

# need_venv: the later steps run in the venv 00-setup-env.sh made.
need_venv() {
  [[ -x "$AOT_PY" ]] || is_dry_run \
    || die "no venv at $AOT_VENV: run the env step first (haloforge build --track therock-aotriton --only env)"
}

# aot_env: the runtime variables of the guide, for this process and what it starts.
# AMD_SERIALIZE_KERNEL is the caller's: 1 for debugging, 0 for timing.
aot_env() {
  export TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL=1
  export PYTORCH_ROCM_ARCH=${GPU_TARGET:-gfx1151}
  export TORCH_ROCM_AOTRITON_PREFER_DEFAULT=1
  export HIP_VISIBLE_DEVICES=${HIP_VISIBLE_DEVICES:-0}
  if [[ -r "$AOT_ENV_FILE" ]]; then
    # shellcheck disable=SC1090
    . "$AOT_ENV_FILE"
  fi
}

# git_at DIR REPO REF: DIR holds REPO at REF (a commit or tag), fetched shallowly; a DIR
# already at REF is left alone, so a resumed build keeps its tree and build directory.
git_at() {
  local dir=$1 repo=$2 ref=$3 head=''
  if [[ -d "$dir/.git" ]]; then
    head=$(git -C "$dir" rev-parse HEAD 2>/dev/null || true)
    if [[ "$head" == "$ref" ]] || [[ -n "$head" && "$(git -C "$dir" rev-parse -q --verify "$ref^{commit}" 2>/dev/null)" == "$head" ]]; then
      log_ok "$dir is at $ref"
      hf_fact_git "$dir" "$repo" "$ref"
      return 0
    fi
  fi
  run git init -q "$dir"
  retry -n 3 -d 10 -- git -C "$dir" fetch -q --depth 1 "$repo" "$ref"
  run git -C "$dir" checkout -q --force FETCH_HEAD
  hf_fact_git "$dir" "$repo" "$ref"
}

# aotriton_pin FILE: the AOTriton commit PyTorch pins in cmake/External/aotriton.cmake.
# Handles both forms seen upstream: set(__AOTRITON_CI_COMMIT "<sha>") and the newer
# if(DEFINED ENV{PYTORCH_AOTRITON_COMMIT}) … else() set(__AOTRITON_CI_COMMIT "<sha>"),
# whose first set() is the environment override, not the pin. Fails when no 40-hex commit.
aotriton_pin() {
  local file=$1 sha
  [[ -r "$file" ]] || {
    log_error "AOTriton pin: $file not found (is PyTorch checked out?)"
    return 1
  }
  sha=$(sed -nE 's/^[[:space:]]*set\(__AOTRITON_CI_COMMIT[[:space:]]+"([0-9a-f]{40})"\).*/\1/p' "$file" | head -n 1)
  if [[ -z "$sha" ]]; then
    log_error "AOTriton pin: no set(__AOTRITON_CI_COMMIT \"<40-hex commit>\") in $file"
    return 1
  fi
  printf '%s\n' "$sha"
}

# py_tag PYTHON: the wheel tag of an interpreter, e.g. cp312.
py_tag() {
  "$1" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")'
}

# wheels_since STAMP DIR TAG: the torch, torchaudio and torchvision wheels in DIR written
# after STAMP for interpreter TAG, newest first per package: exactly this run's output, never
# an older wheel with the same name pattern.
wheels_since() {
  local stamp=$1 dir=$2 tag=$3 pkg f
  for pkg in torch torchaudio torchvision; do
    f=$(find "$dir" -maxdepth 1 -type f -name "${pkg}-*-${tag}-${tag}-*.whl" -newer "$stamp" -printf '%T@ %p\n' 2>/dev/null \
      | sort -rn | head -n 1 | cut -d' ' -f2-)
    [[ -n "$f" ]] && printf '%s\n' "$f"
  done
  return 0
}

# need_tools CMD...: like require, but a dry run only warns, so it can show the commands on
# a machine that is not set up yet.
need_tools() {
  if is_dry_run; then
    local cmd
    for cmd in "$@"; do
      command -v "$cmd" >/dev/null 2>&1 || log_warn "missing on this machine: $cmd (a real run stops here)"
    done
    return 0
  fi
  require "$@"
}

# patch_fbgemm_genai PYTORCH_DIR: guard the FBGEMM GenAI includes of ATen's Blas.cpp with
# __has_include, so a ROCm build never needs the CUDA-oriented fbgemm_gpu headers
# (the fbgemm-genai-link failure). hipify copies cuda/Blas.cpp to hip/Blas.cpp, so the CUDA
# file is the one to patch. Fail-closed through patch_replace_once (applied / already
# present / anchor not found); a PyTorch without FBGEMM GenAI needs nothing.
FBGEMM_GUARD_OLD='#ifdef USE_FBGEMM_GENAI'
FBGEMM_GUARD_NEW='#if defined(USE_FBGEMM_GENAI) && __has_include(<fbgemm_gpu/torch_ops.h>)'
patch_fbgemm_genai() {
  local f=$1/aten/src/ATen/native/cuda/Blas.cpp
  if [[ -f "$f" ]] && ! grep -q 'USE_FBGEMM_GENAI' "$f"; then
    printf 'patch fbgemm-genai-guard: not needed (%s has no FBGEMM GenAI code)\n' "$f"
    return 0
  fi
  patch_replace_once fbgemm-genai-guard "$f" "$FBGEMM_GUARD_OLD" "$FBGEMM_GUARD_NEW"
}

# stage_index NAME: the position of a --continue stage; fails on an unknown name.
AOT_STAGES=(checkout rocm triton pytorch audio vision)
stage_index() {
  local i
  for i in "${!AOT_STAGES[@]}"; do
    [[ "${AOT_STAGES[$i]}" == "$1" ]] && {
      printf '%s\n' "$i"
      return 0
    }
  done
  return 1
}

# prod_wheels_args CONTINUE SKIP_AUDIO SKIP_VISION CLEAN: the build_prod_wheels.py build
# arguments for a resume from stage CONTINUE ("" = from the start). build_prod_wheels.py
# cannot skip torch, and it only enables flash attention when triton is built in the same
# run, so triton and torch are always part of the run; they rebuild incrementally from their
# build directories unless CLEAN is 1. Skipped: the ROCm install (from "triton" on) and the
# wheels before the resume point (audio when resuming at vision).
prod_wheels_args() {
  local from=${1:-checkout} skip_audio=$2 skip_vision=$3 clean=$4 idx
  idx=$(stage_index "$from") || return 1
  printf '%s\n' --pytorch-rocm-arch "$GPU_TARGET" --output-dir "$PYOUT" \
    --build-triton --enable-pytorch-flash-attention-linux --no-enable-pytorch-fbgemm-genai-linux
  if ((idx <= 1)); then
    printf '%s\n' --install-rocm --index-url "$THEROCK_INDEX_URL" --rocm-sdk-version "==$ROCM_VERSION" \
      --rocm-extras "device-$GPU_TARGET"
  fi
  if ((skip_audio)) || ((idx > 4)); then
    printf '%s\n' --no-build-pytorch-audio
  fi
  ((skip_vision)) && printf '%s\n' --no-build-pytorch-vision
  ((clean)) && printf '%s\n' --clean
  return 0
}

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# therock-aotriton, step "pytorch": PyTorch (TheRock flavour) for gfx1151 only, with the
# AOTriton of step 01, FBGEMM GenAI off and its includes guarded, through TheRock's
# build_prod_wheels.py. Writes the list of wheels this run built to
# $HALOFORGE_STATE_DIR/therock-aotriton/wheels.txt for 04-install-wheels.sh.
#
# Usage: 02-build-pytorch-with-aotriton-gfx1151.sh [--continue STAGE] [--skip-audio]
#        [--skip-vision] [--clean] [--help]
#   --continue STAGE  resume at checkout, rocm, triton, pytorch, audio or vision (also the
#                     AOT_CONTINUE variable, for runs through haloforge)
#   --clean           wipe the build directories first (after a stale CMake cache:
#                     or remove only TheRock/external-builds/pytorch/pytorch/build)
# Without --clean every stage rebuilds incrementally, so a failed run resumes cheaply.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=./common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() { sed -n '/^# Usage:/,/^set -Eeuo/{/^set/d;s/^# \{0,1\}//;p;}' "${BASH_SOURCE[0]}"; }

from=${AOT_CONTINUE:-} skip_audio=0 skip_vision=0 clean=0
while (($#)); do
  case $1 in
    --continue)
      (($# >= 2)) || die "--continue needs a stage: ${AOT_STAGES[*]}" 2
      from=$2
      shift 2
      ;;
    --continue=*) from=${1#*=} && shift ;;
    --skip-audio) skip_audio=1 && shift ;;
    --skip-vision) skip_vision=1 && shift ;;
    --clean) clean=1 && shift ;;
    -h | --help) usage && exit 0 ;;
    *) die "unknown option: $1 (see --help)" 2 ;;
  esac
done
if [[ -n "$from" ]] && ! stage_index "$from" >/dev/null; then
  die "unknown stage '$from': one of ${AOT_STAGES[*]}" 2
fi
hf_init
aot_paths
require_env THEROCK_REF THEROCK_INDEX_URL ROCM_VERSION GPU_TARGET
need_venv
bpw=$PT_BUILD/build_prod_wheels.py
[[ -f "$bpw" ]] || is_dry_run || die "$bpw not found: run the aotriton step first (it checks out TheRock at $THEROCK_REF)"
[[ -n "$from" ]] && log_info "resuming at stage: $from"

log_step "Environment for $GPU_TARGET"
export PYTORCH_ROCM_ARCH=$GPU_TARGET USE_FLASH_ATTENTION=1 USE_MEM_EFF_ATTENTION=1
export TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL=1
# FBGEMM GenAI is CUDA-oriented: off, and its includes guarded below (the fbgemm-genai-link failure).
export USE_FBGEMM_GENAI=0 USE_FBGEMM_GPU=0 BUILD_TEST=0
export MAX_JOBS=${MAX_JOBS:-$(max_jobs)}
if [[ -f "$AOT_PREFIX/lib/libaotriton_v2.so" ]]; then
  export AOTRITON_INSTALLED_PREFIX=$AOT_PREFIX
  log_ok "AOTriton from step 01: $AOT_PREFIX ($(cat "$AOT_PREFIX/.haloforge-commit" 2>/dev/null || echo 'commit unknown'))"
elif is_dry_run; then
  log_info "[dry-run] AOTRITON_INSTALLED_PREFIX=$AOT_PREFIX once step 01 has built it"
else
  log_warn "no AOTriton from step 01 in $AOT_PREFIX: PyTorch builds it from source itself (slower)"
  export AOTRITON_INSTALL_FROM_SOURCE=1
fi
log_info "PYTORCH_ROCM_ARCH=$PYTORCH_ROCM_ARCH USE_FLASH_ATTENTION=1 USE_FBGEMM_GENAI=0 MAX_JOBS=$MAX_JOBS"

log_step "FBGEMM GenAI guard"
patch_fbgemm_genai "$PT_BUILD/pytorch"

log_step "build_prod_wheels.py build"
# build_prod_wheels.py installs rocm[...] with `pip install --index-url $THEROCK_INDEX_URL` and
# nothing else (@therock-7.14 lines 445-466): the rocm sdist's build tools and torch's own
# dependencies come from PyPI, so PyPI is the extra index. Your PIP_* settings win: your own
# PIP_EXTRA_INDEX_URL or PIP_NO_INDEX is kept, and a PIP_INDEX_URL (a mirror), which the
# script's --index-url would replace, becomes the extra index instead of PyPI.
pipenv=(env PIP_EXTRA_INDEX_URL=https://pypi.org/simple)
if [[ -n "${PIP_EXTRA_INDEX_URL:-}${PIP_NO_INDEX:-}" ]]; then
  pipenv=()
  log_info "your PIP_EXTRA_INDEX_URL / PIP_NO_INDEX are kept for build_prod_wheels.py's pip"
elif [[ -n "${PIP_INDEX_URL:-}" ]]; then
  pipenv=(env "PIP_EXTRA_INDEX_URL=$PIP_INDEX_URL")
  log_info "your PIP_INDEX_URL stands in for PyPI as build_prod_wheels.py's extra index"
elif [[ -x "$AOT_PY" ]] && "$AOT_PY" -m pip config list 2>/dev/null | grep -qE '^[a-z]+\.(index-url|extra-index-url|no-index)='; then
  pipenv=()
  log_info "your pip configuration names its indexes (pip config list): kept for build_prod_wheels.py's pip"
fi
mapfile -t args < <(prod_wheels_args "$from" "$skip_audio" "$skip_vision" "$clean")
if [[ -f "$bpw" ]]; then
  # Older TheRock trees lack some flags: drop what this checkout's script does not know.
  kept=()
  for ((i = 0; i < ${#args[@]}; i++)); do
    a=${args[$i]}
    flag=${a/#--no-/--}
    if [[ "$a" == --* ]] && ! grep -qF -- "\"$flag\"" "$bpw"; then
      log_warn "$bpw has no $flag: left out"
      [[ "$a" == --rocm-extras || "$a" == --rocm-sdk-version || "$a" == --index-url ]] && i=$((i + 1))
      continue
    fi
    kept+=("$a")
  done
  args=("${kept[@]}")
fi
stamp=$AOT_STATE/build.stamp
if ! is_dry_run; then
  mkdir -p "$PYOUT" "$AOT_STATE"
  : >"$stamp"
fi
run_in "$PT_BUILD" "${pipenv[@]}" "$AOT_PY" build_prod_wheels.py build "${args[@]}"
is_dry_run && exit 0

log_step "The wheels this run built"
tag=$(py_tag "$AOT_PY")
mapfile -t wheels < <(wheels_since "$stamp" "$PYOUT" "$tag")
((${#wheels[@]} > 0)) || die "build_prod_wheels.py finished but wrote no $tag wheel to $PYOUT"
printf '%s\n' "${wheels[@]}" | write_file "$AOT_WHEELS"
for w in "${wheels[@]}"; do
  log_info "  pip install \"$w\" --force-reinstall --no-deps"
done
log_ok "${#wheels[@]} wheel(s) listed in $AOT_WHEELS; step 04 installs exactly these"

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# therock-toolbox step "vllm": vLLM at its pin as a wheel built against the venv's TheRock
# torch for the GPU target. Runs inside the box.
#
# Pins: VLLM_REPO, VLLM_REF, PYTORCH_ROCM_ARCH, GPU_TARGET.
# The project's first build recipe plus what public gfx1151 builds learnt: use_existing_torch.py;
# GPU_TARGET patched into HIP_SUPPORTED_ARCHS when missing (patch-vllm.sh, fail-closed);
# amdsmi and torch pins dropped from the ROCm build requirements; ROCm's clang as CC/CXX
# (segfaults otherwise); HIPFLAGS with the device library path; MAX_JOBS from RAM;
# pip wheel --no-deps --no-build-isolation after the ref's own [build-system] requires
# (read from its pyproject.toml) and its ROCm build requirements file (checked against the
# pins first; a ref whose rock.txt wants another torch stops at once), with setuptools-rust
# by name: vLLM >= 0.23's setup.py imports setuptools_rust at top level, and some refs'
# files do not list it. All of it held to scripts/lib/python-pins.txt; torch stays the venv's.
# The wheel is cached per cache key.

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=./lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
hf_init "$@"
enter_box "$@"
load_toolbox_env
require_env VLLM_REPO VLLM_REF PYTORCH_ROCM_ARCH GPU_TARGET
activate_venv

log_step "vLLM at $VLLM_REF for $GPU_TARGET"
src=$WORK_DIR/vllm
dir=$(cache_dir wheels)
if ! is_dry_run && WHEEL=$(cached_wheel "$dir" 'vllm-*.whl'); then
  log_ok "reusing the cached vLLM wheel $WHEEL (cache key $HALOFORGE_CACHE_KEY)"
  install_wheel "$WHEEL"
  run vllm --version
  exit 0
fi

rocm_env
git_at "$VLLM_REPO" "$VLLM_REF" "$src"
check_rock_torch "$src"

log_step "Use the venv's torch"
if ! is_dry_run && [[ ! -f "$src/use_existing_torch.py" ]]; then
  die "vLLM at $VLLM_REF has no use_existing_torch.py: its build would replace TheRock's torch (failure family vllm-torch-version-conflict); pick a VLLM_REF that has it"
fi
run_in "$src" "$PY" use_existing_torch.py

log_step "Patches"
if is_dry_run; then
  run bash "$HF_SCRIPT_DIR/patch-vllm.sh" "$src" "$GPU_TARGET"
  reqs=$src/requirements/build/rocm.txt
else
  # patch-vllm.sh names the build requirements file it found (layout changed in Apr 2026).
  reqs_out=$(mktemp)
  HF_PATCH_REQS_OUT=$reqs_out run bash "$HF_SCRIPT_DIR/patch-vllm.sh" "$src" "$GPU_TARGET"
  reqs=$(<"$reqs_out")
  rm -f "$reqs_out"
fi

log_step "Build requirements (torch stays the venv's)"
constraints=$VENV_DIR/haloforge-constraints.txt
check_reqs_pins "$reqs"
# The wheel's run-time requirements are installed with the same pins after the build: a ref
# whose requirements/rocm.txt wants setuptools>=83.0.0 (vllm-project/vllm @027281ae) would stop
# there, hours later, so it stops here.
runtime=$src/requirements/rocm.txt
if is_dry_run || [[ -f "$runtime" ]]; then
  check_reqs_pins "$runtime" "run-time requirements"
fi
pip_install_recorded "$PY" --constraint "$constraints" --constraint "$HF_PYTHON_PINS" -r "$reqs"
pip_install_pinned "$PY" setuptools-scm setuptools-rust
if [[ -e "$VENV_DIR/bin/cmake" ]]; then
  # Build requirements may list cmake; the distro's /usr/bin/cmake must stay first.
  run "${PIP[@]}" uninstall -y cmake
fi

log_step "Build the wheel (MAX_JOBS=$(max_jobs), $(mem_gib) GiB RAM)"
build_wheel vllm 'vllm-*.whl' "$src" \
  VLLM_TARGET_DEVICE=rocm "PYTORCH_ROCM_ARCH=$PYTORCH_ROCM_ARCH" "GPU_ARCHS=$GPU_TARGET" \
  "ROCM_PATH=$ROCM_PATH" "ROCM_HOME=$ROCM_HOME" "HIP_DEVICE_LIB_PATH=$HIP_DEVICE_LIB_PATH" \
  "HIPFLAGS=$HIPFLAGS" "CC=$ROCM_CLANG" "CXX=$ROCM_CLANG++" "MAX_JOBS=$(max_jobs)" \
  PYTHONNOUSERSITE=1 PYTHONPATH=

log_step "Install"
install_wheel "$WHEEL"
run vllm --version
triton_kept

# shellcheck shell=bash
# shellcheck source-path=SCRIPTDIR
# Helpers shared by the therock-toolbox steps (sourced after lib/common.sh).
# Everything here runs inside the box: the venv, TheRock's ROCm paths, git checkouts at
# pinned commits and the wheel cache.

# load_toolbox_env: the box's build variables (toolbox.env: in the environment under the
# runner, read from the checkout by hand); pins and the caller's environment win over it.
load_toolbox_env() {
  load_toolbox_env_file
  : "${WORK_DIR:=/workspace}" "${VENV_DIR:=/opt/venv}" "${GPU_TARGET:=gfx1151}"
  : "${PYTORCH_ROCM_ARCH:=$GPU_TARGET}" "${GPU_ARCHS:=$GPU_TARGET}"
  export WORK_DIR VENV_DIR GPU_TARGET PYTORCH_ROCM_ARCH GPU_ARCHS
}

# owned_dir DIR: create DIR (root-owned parents such as /opt) and hand it to the user.
owned_dir() {
  local dir=$1
  if [[ -d "$dir" && -w "$dir" ]]; then
    return 0
  fi
  as_root mkdir -p "$dir"
  as_root chown "$(id -u):$(id -g)" "$dir"
}

# activate_venv: put the venv first on PATH (what `source bin/activate` does), failing
# clearly when 01-install-tools.sh has not made it.
activate_venv() {
  if ! is_dry_run && [[ ! -x "$VENV_DIR/bin/python" ]]; then
    die "no Python venv at $VENV_DIR; run 01-install-tools.sh first (haloforge build --track therock-toolbox --from tools)"
  fi
  log_info "venv: $VENV_DIR"
  export VIRTUAL_ENV=$VENV_DIR
  export PATH=$VENV_DIR/bin:$PATH
  # A user site or a source tree on PYTHONPATH loads a second torch (the
  # two-torch-pybind-already-registered failure).
  export PYTHONNOUSERSITE=1
  unset PYTHONPATH
  PY=$VENV_DIR/bin/python
  PIP=("$PY" -m pip)
}

# pip_installed_version DIST: the installed version of a distribution, empty when absent.
pip_installed_version() {
  [[ -x "${PY:-}" ]] || return 0
  "$PY" - "$1" 2>/dev/null <<-'PY' || true
		import sys
		from importlib import metadata
		try:
		    print(metadata.version(sys.argv[1]))
		except metadata.PackageNotFoundError:
		    pass
	PY
}

# rocm_env: TheRock's paths from rocm-sdk:
# ROCM_ROOT, ROCM_PATH, ROCM_HOME, HIP_DEVICE_LIB_PATH, HIPFLAGS and ROCm's clang.
rocm_env() {
  if is_dry_run && ! "${PY:-false}" -c 'import rocm_sdk' 2>/dev/null; then
    # A dry run before 02 has no SDK yet: show where the value comes from.
    # shellcheck disable=SC2016
    ROCM_ROOT='$(rocm-sdk path --root)'
  else
    ROCM_ROOT=$("$PY" -m rocm_sdk path --root) \
      || die "rocm-sdk path --root failed: is TheRock's rocm[devel] installed (02-install-rocm.sh)?"
  fi
  export ROCM_ROOT ROCM_PATH=$ROCM_ROOT ROCM_HOME=$ROCM_ROOT
  export HIP_DEVICE_LIB_PATH=$ROCM_ROOT/lib/llvm/amdgcn/bitcode
  export HIPFLAGS="--rocm-device-lib-path=$HIP_DEVICE_LIB_PATH"
  ROCM_CLANG=$ROCM_ROOT/lib/llvm/bin/clang
  if ! is_dry_run; then
    [[ -d "$HIP_DEVICE_LIB_PATH" ]] \
      || die "cannot find ROCm device library: $HIP_DEVICE_LIB_PATH is missing; re-run rocm-sdk init (02-install-rocm.sh)"
    [[ -x "$ROCM_CLANG" ]] || ROCM_CLANG=$ROCM_ROOT/llvm/bin/clang
    [[ -x "$ROCM_CLANG" ]] || die "ROCm's clang not found under $ROCM_ROOT (lib/llvm/bin or llvm/bin)"
  fi
  log_info "ROCm SDK root: $ROCM_ROOT"
}

# git_at REPO REF DIR: DIR holds REPO checked out at REF, clean (earlier patches undone), so
# a re-run patches and builds exactly the pinned tree. Shallow fetch of the one commit.
git_at() {
  local repo=$1 ref=$2 dir=$3
  if [[ ! -d "$dir/.git" ]]; then
    run mkdir -p "$dir"
    run git -C "$dir" init -q
    run git -C "$dir" remote add origin "$repo"
  else
    run git -C "$dir" remote set-url origin "$repo"
  fi
  local target=$ref
  if ! is_dry_run && git -C "$dir" cat-file -e "$ref^{commit}" 2>/dev/null; then
    log_info "$ref already fetched in $dir"
  else
    # A branch pin floats: fetched every time, checked out through a local tag.
    retry -n 3 -d 5 -- git -C "$dir" fetch --depth 1 origin "$ref"
    run git -C "$dir" tag -f haloforge-pin FETCH_HEAD
    target=haloforge-pin
  fi
  run git -C "$dir" checkout -q --force --detach "$target"
  run git -C "$dir" reset -q --hard
  run git -C "$dir" clean -q -ffdx
  if ! is_dry_run; then
    log_ok "$(basename "$dir") at $(git -C "$dir" rev-parse HEAD)"
  fi
  hf_fact_git "$dir" "$repo" "$ref"
}

# Build tools every wheel build of this track needs in the venv before
# `pip wheel --no-build-isolation`, at their python-pins.txt versions: a fresh venv holds
# only pip (CPython 3.12 ensurepip), and flash-attention's setup.py imports packaging and
# wheel.bdist_wheel at top level (ROCm/flash-attention setup.py @16d5154a, lines 12, 20).
VENV_BUILD_TOOLS=(pip setuptools wheel packaging)

# venv_build_tools: the pinned build tools in the venv (already satisfied: nothing fetched).
venv_build_tools() {
  pip_install_pinned "$PY" "${VENV_BUILD_TOOLS[@]}"
}

# What the venv or the distro provides, never a build requirement from PyPI: TheRock's torch
# family (a PyPI torch would replace it) and cmake (the distro's; the
# pip-cmake-broken-shim failure). amdsmi is the SDK's own (02-install-rocm.sh).
VENV_PROVIDED=(torch torchvision torchaudio triton pytorch-triton-rocm cmake amdsmi)

# build_wheel NAME GLOB SRC [VAR=VALUE...]: the wheel of SRC built with pip wheel --no-deps
# --no-build-isolation (against the venv's torch) into the step's cache directory, or the
# cached one while the step's cache key is unchanged. Sets WHEEL to the wheel's path.
# First the pinned build tools and SRC's own [build-system] requires (install_build_requires).
build_wheel() {
  local name=$1 glob=$2 src=$3
  shift 3
  local dir
  dir=$(cache_dir wheels)
  if ! is_dry_run && WHEEL=$(cached_wheel "$dir" "$glob"); then
    log_ok "reusing the cached $name wheel $WHEEL (cache key $HALOFORGE_CACHE_KEY)"
    return 0
  fi
  if ! is_dry_run; then
    mkdir -p "$dir"
  fi
  venv_build_tools
  install_build_requires "$PY" "$src" "${VENV_PROVIDED[@]}"
  run_in "$src" env "$@" "$PY" -m pip wheel . --no-deps --no-build-isolation -v -w "$dir"
  if is_dry_run; then
    WHEEL=$dir/$glob
    return 0
  fi
  WHEEL=$(cached_wheel "$dir" "$glob") || die "pip wheel finished but no $glob in $dir"
  log_ok "built $WHEEL"
  cache_prune wheels
}

# install_wheel WHEEL: install a built wheel and its dependencies, with torch and friends
# held at the versions 02-install-rocm.sh installed (the vllm-torch-version-conflict failure).
install_wheel() {
  local wheel=$1 constraints=$VENV_DIR/haloforge-constraints.txt report
  report=$(hf_pip_report)
  if is_dry_run || [[ -r "$constraints" ]]; then
    run "${PIP[@]}" install --constraint "$constraints" --constraint "$HF_PYTHON_PINS" "$wheel" --report "$report"
  else
    log_warn "no $constraints (02-install-rocm.sh writes it); installing without torch constraints"
    run "${PIP[@]}" install --constraint "$HF_PYTHON_PINS" "$wheel" --report "$report"
  fi
  hf_fact_pip_report "$report"
}

# triton_kept: the venv's triton is still the one 02-install-rocm.sh installed with TheRock's
# torch (its line in haloforge-constraints.txt). A build's setup.py may replace it: AITER's
# uninstalls every triton and installs a generic one for ROCm 7.2 unless
# AITER_USE_SYSTEM_TRITON=1 (ROCm/aiter setup.py, scripts/SOURCES.md), and `vllm serve`'s
# compiled path (torch.compile, inductor) runs on whatever triton is there. Steps 03-06 call it.
triton_kept() {
  local constraints=$VENV_DIR/haloforge-constraints.txt want have
  if is_dry_run; then
    log_info "[dry-run] the venv's triton must still be the one in $constraints"
    return 0
  fi
  if [[ ! -r $constraints ]]; then
    log_warn "no $constraints (02-install-rocm.sh writes it): the venv's triton is not checked"
    return 0
  fi
  want=$(grep -Ei '^(triton|pytorch-triton-rocm)==' "$constraints" | sort | paste -sd' ' || true)
  [[ -n $want ]] || return 0
  have=$("${PIP[@]}" freeze --all 2>/dev/null | grep -Ei '^(triton|amd-triton|pytorch-triton|pytorch-triton-rocm|triton-rocm|triton-kernels)==' | sort | paste -sd' ' || true)
  if [[ $have == "$want" ]]; then
    log_ok "triton is still TheRock's: $want"
    return 0
  fi
  die "the venv's triton changed: TheRock's torch was installed with '$want', the venv now has '${have:-no triton}'. A build replaced it (AITER's setup.py does unless AITER_USE_SYSTEM_TRITON=1). Restore it: $PY -m pip install --force-reinstall --no-deps --index-url ${THEROCK_INDEX_URL:-<THEROCK_INDEX_URL>} $want"
}

# check_rock_torch SRC: a vLLM ref that carries TheRock's own build file,
# requirements/build/rock.txt (vllm-project/vllm 027281ae: torch==2.12.0+rocm7.14.0), names
# the torch it is built against; the venv's torch must be that one, or the build would mix
# two torches. Read before use_existing_torch.py strips the line. A ref without the file
# passes.
check_rock_torch() {
  local rock=$1/requirements/build/rock.txt have want rc=0
  if is_dry_run; then
    log_info "[dry-run] if $rock exists: its torch pin must be the venv's torch ($TORCH_VERSION), else the step stops naming the torch it wants"
    return 0
  fi
  [[ -f "$rock" ]] || return 0
  have=$(pip_installed_version torch)
  [[ -n "$have" ]] || die "no torch in $VENV_DIR: run the rocm step first (haloforge build --track therock-toolbox --from rocm)"
  want=$("$PY" "$HF_LIB_DIR/reqs_check.py" "$rock" --torch "$have") || rc=$?
  case $rc in
    0) log_ok "$rock: built for torch $have, the venv's" ;;
    4) die "vLLM at ${VLLM_REF:-?} builds against torch $want (requirements/build/rock.txt), this venv has torch $have (TORCH_VERSION=${TORCH_VERSION:-?}): use a pin set whose torch is $want (haloforge pins sets), or a VLLM_REF made for torch $have" ;;
    *) die "cannot read the torch pin of $rock (the reason is above)" ;;
  esac
}

# check_reqs_pins FILE [WHAT]: FILE (a requirements file, with its -r includes; WHAT says
# which, default "build requirements") against python-pins.txt before pip: a floor or cap
# that a pin does not satisfy (a newer ref's setuptools>=83.0.0 against setuptools==79.0.1)
# stops here with the file, the line and the pin to change, instead of pip's raw
# ResolutionImpossible.
check_reqs_pins() {
  local file=$1 what=${2:-build requirements}
  if is_dry_run; then
    log_info "[dry-run] $file ($what) and its -r includes are checked against $HF_PYTHON_PINS before pip"
    return 0
  fi
  "$PY" "$HF_LIB_DIR/reqs_check.py" "$file" --pins "$HF_PYTHON_PINS" \
    || die "the $what of vLLM at ${VLLM_REF:-?} ($file) ask for versions $HF_PYTHON_PINS does not allow (the lines above): a pin set made for this ref carries the pins it needs; change the pin only with the torch it must work with"
  log_ok "$file ($what): every pinned tool satisfies it"
}

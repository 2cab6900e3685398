#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# therock-toolbox step "rocm": TheRock's ROCm SDK wheels and torch for the GPU target, in
# the venv. Runs inside the box.
#
# Pins: THEROCK_INDEX_URL, TORCH_INDEX_URL (optional: torch's own index, default
# THEROCK_INDEX_URL), ROCM_VERSION, TORCH_VERSION, TORCHVISION_VERSION, TORCHAUDIO_VERSION,
# GPU_TARGET.
# TheRock RELEASES.md (therock-7.14, and the same on ROCm 10's whl-next index):
# rocm[libraries,devel,device-<gfx>] plus the device
# wheel rocm-sdk-device-<gfx> by name (known issue #5347: the extra may be missing from the
# rocm metadata), then torch[device-<gfx>], torchvision[device-<gfx>], torchaudio; PyPI stays
# an extra index for their plain dependencies (sympy, filelock, …), as kyuz0's
# Dockerfile.ubuntu-repoamd and vLLM's requirements/build/rock.txt do; the exact ==…+rocm
# pins keep ROCm and torch coming from AMD. `rocm-sdk init` runs after the last device wheel
# (the devel tree links device files only at its first expansion). Then the SDK's own
# amdsmi ($(rocm-sdk path --root)/share/amd_smi): vLLM detects ROCm only through amdsmi
# (vllm/platforms/__init__.py), and PyPI's amdsmi does not bind to this SDK's library.
# Fails fast (one short probe, no retry storm) when the index is unreachable.
# Idempotent: pinned versions already installed are not downloaded again.

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=./lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
hf_init "$@"
enter_box "$@"
load_toolbox_env
require_env THEROCK_INDEX_URL ROCM_VERSION TORCH_VERSION TORCHVISION_VERSION TORCHAUDIO_VERSION GPU_TARGET
activate_venv

extra=device-$GPU_TARGET
rocm_specs=("rocm[libraries,devel,$extra]==$ROCM_VERSION" "rocm-sdk-$extra==$ROCM_VERSION")
torch_specs=("torch[$extra]==$TORCH_VERSION" "torchvision[$extra]==$TORCHVISION_VERSION" "torchaudio==$TORCHAUDIO_VERSION")
index_timeout=${HALOFORGE_INDEX_TIMEOUT:-10}
torch_index=${TORCH_INDEX_URL:-$THEROCK_INDEX_URL}
# PyPI, for the plain dependencies the AMD indexes may not mirror.
PYPI_SIMPLE=https://pypi.org/simple
rocm_index_args=(--index-url "$THEROCK_INDEX_URL" --extra-index-url "$PYPI_SIMPLE")
torch_index_args=(--index-url "$torch_index")
if [[ "$torch_index" != "$THEROCK_INDEX_URL" ]]; then
  # torch's device wheels depend on the SDK's packages, which live on the SDK index.
  torch_index_args+=(--extra-index-url "$THEROCK_INDEX_URL")
fi
torch_index_args+=(--extra-index-url "$PYPI_SIMPLE")

# installed_ok: every pinned distribution is installed at its pin.
installed_ok() {
  [[ "$(pip_installed_version rocm)" == "$ROCM_VERSION" &&
  "$(pip_installed_version torch)" == "$TORCH_VERSION" &&
  "$(pip_installed_version torchvision)" == "$TORCHVISION_VERSION" &&
  "$(pip_installed_version torchaudio)" == "$TORCHAUDIO_VERSION" ]]
}

# check_index: stop within seconds when the index does not answer. pip's own attempt (no
# retries, short timeout) stays in the log: its "No matching distribution found" line is
# what the wheel-index-unreachable diagnosis keys on.
check_index() {
  if url_reachable "$THEROCK_INDEX_URL" "$index_timeout"; then
    log_ok "wheel index answers: $THEROCK_INDEX_URL"
    return 0
  fi
  log_error "wheel index unreachable: $THEROCK_INDEX_URL (no HTTP answer within ${index_timeout}s)"
  run "${PIP[@]}" install --retries 0 --timeout "$index_timeout" --index-url "$THEROCK_INDEX_URL" "${rocm_specs[@]}" || true
  die "cannot reach TheRock's wheel index $THEROCK_INDEX_URL, so no ROCm or torch wheels can be installed. Check the network, then the THEROCK_INDEX_URL pin in versions.env: the per-family indexes (…/v2/gfx1151/, …/whl/gfx1151/) are retired, and repo.amd.com/rocm/ is AMD's legacy folder (TheRock RFC0012); $(other_set)" 3
}

# unresolved WHAT: the pins answer no wheel on an index that answers: say what to do.
unresolved() {
  die "pip could not install $1 (its message is above: look for \"No matching distribution found\"). The index answers, so the pinned versions are not on it for Python $PYTHON_VERSION: AMD retires old wheels (a report of 2026-10-07 no longer found the exact 7.14.0 torch wheels on the whl-next indexes). $(other_set), or check the pins against the index (haloforge pins status)" 3
}

# other_set: the known-good set to switch to when this one does not resolve: the ROCm 10 set
# (the default) and the 7.14 set it replaced (kept while AMD serves its index).
other_set() {
  case $ROCM_VERSION in
    7.*) printf 'Switch to the ROCm 10 set: haloforge pins use rocm-10.0 (ROCM_VERSION=10.0.0 on https://stable.repo.amd.com/rocm/whl-next/)' ;;
    *) printf 'Switch to the previous known-good set while AMD still serves it: haloforge pins use rocm-7.14 (haloforge pins sets lists every set)' ;;
  esac
}

install_wheels() {
  if ! is_dry_run && installed_ok; then
    log_ok "rocm $ROCM_VERSION, torch $TORCH_VERSION, torchvision $TORCHVISION_VERSION, torchaudio $TORCHAUDIO_VERSION already installed"
    return 0
  fi
  if ! is_dry_run; then
    check_index
  fi
  local report
  report=$(hf_pip_report)
  run "${PIP[@]}" install --retries 2 --timeout 60 --constraint "$HF_PYTHON_PINS" "${rocm_index_args[@]}" "${rocm_specs[@]}" --report "$report" \
    || unresolved "${rocm_specs[*]} from $THEROCK_INDEX_URL"
  hf_fact_pip_report "$report"
  report=$(hf_pip_report)
  run "${PIP[@]}" install --retries 2 --timeout 60 --constraint "$HF_PYTHON_PINS" "${torch_index_args[@]}" "${torch_specs[@]}" --report "$report" \
    || unresolved "${torch_specs[*]} from $torch_index"
  hf_fact_pip_report "$report"
}

# install_amdsmi: the SDK's own amdsmi Python package, built from the SDK's source tree, and
# its library made findable. amdsmi looks for libamd_smi.so first inside its own package,
# then in $ROCM_PATH/lib, then /opt/rocm/lib; TheRock ships only the versioned soname
# (kyuz0 links libamd_smi.so.26 on 7.14, .27 on ROCm 10), so the package gets a link to the
# library rocm_sdk.find_libraries("amd_smi") names.
install_amdsmi() {
  local src=$ROCM_ROOT/share/amd_smi
  if ! is_dry_run && [[ ! -f "$src/pyproject.toml" && ! -f "$src/setup.py" ]]; then
    die "TheRock $ROCM_VERSION has no amdsmi source at $src: without amdsmi vLLM cannot detect ROCm (\"Failed to infer device type\"); re-run rocm-sdk init, or report the layout change"
  fi
  install_build_requires "$PY" "$src"
  run "${PIP[@]}" install --no-build-isolation --constraint "$HF_PYTHON_PINS" "$src"
  if is_dry_run; then
    run "$PY" "$HF_SCRIPT_DIR/amdsmi_link.py"
    return 0
  fi
  run "$PY" "$HF_SCRIPT_DIR/amdsmi_link.py" \
    || die "amdsmi from $src does not load its library (the reason is above); vLLM would run without a GPU platform"
}

# rocm_sdk_init_file: rocm_sdk/__init__.py in the venv (a predicted path in a dry run).
rocm_sdk_init_file() {
  "$PY" -c 'import rocm_sdk; print(rocm_sdk.__file__)' 2>/dev/null \
    || printf '%s\n' "$VENV_DIR/lib/python$PYTHON_VERSION/site-packages/rocm_sdk/__init__.py"
}

# fix_amdsmi_double_free: TheRock preloads ROCm libraries with RTLD_GLOBAL by default; with a
# second copy of libamd_smi (a standalone amdsmi package bundling its own) that gives two
# copies of the same symbols and "double free or corruption" at exit (the
# therock-amdsmi-double-free failure). Patch the default to False (rocm_sdk/__init__.py @therock-7.14
# lines 92, 121: preload_libraries(*shortnames, rtld_global: bool = True)). When the anchor
# moved, go on: the amdsmi installed below is the SDK's own and loads the very library file
# torch preloads, so no second copy exists.
fix_amdsmi_double_free() {
  local init
  init=$(rocm_sdk_init_file)
  if patch_replace_once rocm-sdk-preload-rtld-local "$init" \
    'rtld_global: bool = True' 'rtld_global: bool = False'; then
    return 0
  fi
  log_warn "rocm_sdk's preload changed upstream ($init): left as it is; the SDK's own amdsmi below shares torch's libamd_smi"
}

# link_opt_rocm: /opt/rocm -> the SDK root, for builds that look there.
link_opt_rocm() {
  if [[ -e /opt/rocm && ! -L /opt/rocm ]]; then
    log_warn "/opt/rocm is a real directory in the box, left alone; builds use ROCM_PATH=$ROCM_ROOT"
    return 0
  fi
  if ! is_dry_run && [[ "$(readlink /opt/rocm 2>/dev/null)" == "$ROCM_ROOT" ]]; then
    log_ok "/opt/rocm -> $ROCM_ROOT"
    return 0
  fi
  as_root ln -sfn "$ROCM_ROOT" /opt/rocm
}

# write_constraints: the later steps install their wheels with torch held at these versions.
write_constraints() {
  if is_dry_run; then
    printf '[dry-run] %s freeze | grep torch/triton/rocm > %s\n' "$PY -m pip" "$VENV_DIR/haloforge-constraints.txt"
    return 0
  fi
  "${PIP[@]}" freeze --all | grep -Ei '^(torch|torchvision|torchaudio|triton|pytorch-triton-rocm|rocm|rocm-sdk[a-z0-9_-]*|rocm_sdk[a-z0-9_-]*)==' \
    | write_file "$VENV_DIR/haloforge-constraints.txt"
}

log_step "TheRock ROCm $ROCM_VERSION and torch $TORCH_VERSION for $GPU_TARGET from $THEROCK_INDEX_URL"
venv_build_tools
install_wheels

log_step "ROCm SDK (init after the last device wheel)"
run rocm-sdk init
run rocm-sdk version
run rocm-sdk targets
rocm_env
link_opt_rocm

log_step "amdsmi double free (RTLD_GLOBAL preload)"
fix_amdsmi_double_free

log_step "amdsmi from the SDK (vLLM's ROCm detection)"
install_amdsmi

log_step "Checks"
run rocm-sdk test
run "$PY" -c 'import torch; print("torch", torch.__version__, "hip", torch.version.hip, "gpu", torch.cuda.is_available())'
write_constraints

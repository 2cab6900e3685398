#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# therock-toolbox step "rocm": TheRock's ROCm SDK wheels and torch for the GPU target, in
# the venv. Runs inside the box.
#
# Pins: THEROCK_INDEX_URL, ROCM_VERSION, TORCH_VERSION, TORCHVISION_VERSION,
# TORCHAUDIO_VERSION, GPU_TARGET.
# FACTS.md "Where ROCm/PyTorch for gfx1151 comes from": rocm[libraries,devel,device-<gfx>]
# and torch[device-<gfx>], torchvision[device-<gfx>], torchaudio from the same multi-arch
# index; `rocm-sdk init` unpacks the devel files.
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
rocm_spec="rocm[libraries,devel,$extra]==$ROCM_VERSION"
torch_specs=("torch[$extra]==$TORCH_VERSION" "torchvision[$extra]==$TORCHVISION_VERSION" "torchaudio==$TORCHAUDIO_VERSION")
index_timeout=${HALOFORGE_INDEX_TIMEOUT:-10}

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
  run "${PIP[@]}" install --retries 0 --timeout "$index_timeout" --index-url "$THEROCK_INDEX_URL" "$rocm_spec" || true
  die "cannot reach TheRock's wheel index $THEROCK_INDEX_URL, so no ROCm or torch wheels can be installed. Check the network, then the THEROCK_INDEX_URL pin in versions.env: the per-family indexes (…/v2/gfx1151/, …/whl/gfx1151/) are retired; the stable multi-arch index is https://repo.amd.com/rocm/whl-multi-arch/" 3
}

install_wheels() {
  if ! is_dry_run && installed_ok; then
    log_ok "rocm $ROCM_VERSION, torch $TORCH_VERSION, torchvision $TORCHVISION_VERSION, torchaudio $TORCHAUDIO_VERSION already installed"
    return 0
  fi
  if ! is_dry_run; then
    check_index
  fi
  run "${PIP[@]}" install --retries 2 --timeout 60 --index-url "$THEROCK_INDEX_URL" "$rocm_spec" \
    || die "pip could not install $rocm_spec from $THEROCK_INDEX_URL: the index answers, so check that it has ROCM_VERSION=$ROCM_VERSION for $GPU_TARGET and Python $PYTHON_VERSION (pip's message is above)"
  run "${PIP[@]}" install --retries 2 --timeout 60 --index-url "$THEROCK_INDEX_URL" "${torch_specs[@]}" \
    || die "pip could not install ${torch_specs[*]} from $THEROCK_INDEX_URL: check TORCH_VERSION, TORCHVISION_VERSION and TORCHAUDIO_VERSION against the index (pip's message is above)"
}

# rocm_sdk_init_file: rocm_sdk/__init__.py in the venv (a predicted path in a dry run).
rocm_sdk_init_file() {
  "$PY" -c 'import rocm_sdk; print(rocm_sdk.__file__)' 2>/dev/null \
    || printf '%s\n' "$VENV_DIR/lib/python$PYTHON_VERSION/site-packages/rocm_sdk/__init__.py"
}

# fix_amdsmi_double_free: TheRock preloads ROCm libraries with RTLD_GLOBAL by default; with
# the standalone amdsmi package that gives two copies of the same symbols and "double free
# or corruption" at exit (FAILURES.md therock-amdsmi-double-free). Patch the default to
# False (FACTS.md: preload_libraries(*shortnames, rtld_global: bool = True)); when the
# anchor moved, remove amdsmi instead, and never guess.
fix_amdsmi_double_free() {
  local init
  init=$(rocm_sdk_init_file)
  if patch_replace_once rocm-sdk-preload-rtld-local "$init" \
    'rtld_global: bool = True' 'rtld_global: bool = False'; then
    return 0
  fi
  if [[ -n "$(pip_installed_version amdsmi)" ]]; then
    log_warn "rocm_sdk's preload changed upstream; removing the standalone amdsmi package instead"
    run "${PIP[@]}" uninstall -y amdsmi
  else
    log_warn "rocm_sdk's preload changed upstream and amdsmi is not installed: nothing can clash, no fix needed"
  fi
}

# link_opt_rocm: /opt/rocm -> the SDK root, for builds that look there (seed build-process).
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
install_wheels

log_step "ROCm SDK"
run rocm-sdk init
run rocm-sdk version
run rocm-sdk targets
rocm_env
link_opt_rocm

log_step "amdsmi double free (RTLD_GLOBAL preload)"
fix_amdsmi_double_free

log_step "Checks"
run rocm-sdk test
run "$PY" -c 'import torch; print("torch", torch.__version__, "hip", torch.version.hip, "gpu", torch.cuda.is_available())'
write_constraints

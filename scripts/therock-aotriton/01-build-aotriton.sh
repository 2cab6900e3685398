#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# therock-aotriton, step "aotriton" (01-build-aotriton.sh): TheRock at its pin, PyTorch checked
# out by TheRock's own scripts from the ROCm fork TheRock builds its 2.11 wheels from
# (PYTORCH_REPO, PYTORCH_REF = release/2.11: external-builds/pytorch/README.md @therock-7.14;
# pytorch_torch_repo.py's own defaults are upstream pytorch/pytorch and "nightly", lines 37-38,
# so pinning TheRock alone pins no torch), audio and vision at the commits the fork's
# related_commits names (--require-related-commit), and AOTriton built for the GPU target at
# the commit PyTorch pins in
# cmake/External/aotriton.cmake, installed under aotriton/build/install_dir, where 02 hands
# it to the PyTorch build (AOTRITON_INSTALLED_PREFIX). AOTriton's CMakeLists.txt needs
# pkg-config and liblzma's headers (pkg_search_module(LZMA REQUIRED liblzma) @8fdb4a43,
# lines 163-176): checked first, with the package to install.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=./common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
hf_init "$@"
aot_paths

require_env THEROCK_REPO THEROCK_REF GPU_TARGET PYTORCH_REPO PYTORCH_REF
need_tools git cmake ninja pkg-config
if ! is_dry_run && ! pkg-config --exists liblzma; then
  if command -v dnf >/dev/null 2>&1; then lzma=xz-devel; else lzma=liblzma-dev; fi
  die "AOTriton needs liblzma's development files (pkg-config finds no liblzma): $(_hf_install_hint "$lzma")"
fi
need_venv
[[ "$(command -v cmake)" == */venv/* || "$(command -v cmake)" == *"/.local/bin/"* ]] \
  && log_warn "cmake is $(command -v cmake), a pip shim; the distro's cmake is safer (failure family pip-cmake-broken-shim)"

log_step "TheRock at $THEROCK_REF"
git_at "$THEROCK_DIR" "$THEROCK_REPO" "$THEROCK_REF"

log_step "Check out PyTorch ($PYTORCH_REPO $PYTORCH_REF), audio, vision and triton with TheRock's patches"
if [[ ! "$PYTORCH_REF" =~ ^[0-9a-f]{40}$ ]]; then
  log_warn "PYTORCH_REF=$PYTORCH_REF is not a commit: a branch floats, so this checks out what it holds today; the commit is logged and recorded below, and haloforge pins lock (or --set PYTORCH_REF=<that sha>) rebuilds the same torch"
fi
# A checkout made from other pins is not reused: audio, vision and triton follow the torch tree.
stamp=$PT_BUILD/.haloforge-pytorch-ref
if [[ -d "$PT_BUILD/pytorch/.git" ]] && ! is_dry_run; then
  have=$(cat "$stamp" 2>/dev/null || echo 'unknown pins')
  [[ "$have" == "$PYTORCH_REPO $PYTORCH_REF" ]] \
    || die "$PT_BUILD/pytorch was checked out from $have, the pins say $PYTORCH_REPO $PYTORCH_REF: remove $PT_BUILD/pytorch, pytorch_audio, pytorch_vision and triton there, then run this step again"
fi
for repo in torch audio vision; do
  dir=$PT_BUILD/pytorch
  args=(--gitrepo-origin "$PYTORCH_REPO" --repo-hashtag "$PYTORCH_REF")
  case $repo in
    audio) dir=$PT_BUILD/pytorch_audio args=(--require-related-commit) ;;
    vision) dir=$PT_BUILD/pytorch_vision args=(--require-related-commit) ;;
  esac
  if [[ -d "$dir/.git" ]]; then
    log_ok "$dir already checked out (remove it to check out again)"
  else
    run_in "$PT_BUILD" "$AOT_PY" "pytorch_${repo}_repo.py" checkout "${args[@]}"
    if [[ $repo == torch ]] && ! is_dry_run; then
      printf '%s %s\n' "$PYTORCH_REPO" "$PYTORCH_REF" >"$stamp"
    fi
  fi
done
if ! is_dry_run; then
  log_info "PyTorch tree (TheRock adds its hipify commit on top of the checked-out one):"
  git -C "$PT_BUILD/pytorch" log -3 --format='  %H %s'
  # The upstream commit, which TheRock's do_checkout tags THEROCK_UPSTREAM_DIFFBASE before
  # hipify (repo_management.py, read 2026-11-24): haloforge pins lock pins PYTORCH_REF to it.
  hf_fact_git "$PT_BUILD/pytorch" "$PYTORCH_REPO" "$PYTORCH_REF" THEROCK_UPSTREAM_DIFFBASE
fi
# Triton after torch: its pin lives in the torch tree (TheRock's build_prod_wheels.py docs).
if [[ -d "$PT_BUILD/triton/.git" ]]; then
  log_ok "$PT_BUILD/triton already checked out"
else
  run_in "$PT_BUILD" "$AOT_PY" pytorch_triton_repo.py checkout
fi

log_step "AOTriton at PyTorch's pin"
cmake_file=$PT_BUILD/pytorch/cmake/External/aotriton.cmake
if is_dry_run && [[ ! -f "$cmake_file" ]]; then
  pin='<pin from pytorch/cmake/External/aotriton.cmake>'
  log_info "[dry-run] the pin is read from $cmake_file after the checkout"
else
  pin=$(aotriton_pin "$cmake_file") || die "cannot read the AOTriton pin; look at $cmake_file"
  if [[ -n "${PYTORCH_AOTRITON_COMMIT:-}" && "$PYTORCH_AOTRITON_COMMIT" != "$pin" ]]; then
    log_warn "PYTORCH_AOTRITON_COMMIT=$PYTORCH_AOTRITON_COMMIT overrides PyTorch's pin $pin"
    pin=$PYTORCH_AOTRITON_COMMIT
  fi
  log_ok "PyTorch pins AOTriton $pin"
fi
if [[ -f "$AOT_PREFIX/lib/libaotriton_v2.so" && "$(cat "$AOT_PREFIX/.haloforge-commit" 2>/dev/null)" == "$pin" ]]; then
  log_ok "AOTriton $pin is already built in $AOT_PREFIX"
  exit 0
fi
git_at "$AOT_SRC" https://github.com/ROCm/aotriton.git "$pin"
run git -C "$AOT_SRC" submodule update --init --recursive --depth 1
report=$(hf_pip_report)
run "$AOT_PY" -m pip install --constraint "$HF_PYTHON_PINS" -r "$AOT_SRC/requirements.txt" --report "$report"
hf_fact_pip_report "$report"
# AOTriton's build runs "ninja install" as one unit (its README: never plain ninja);
# AOTRITON_GPU_BUILD_TIMEOUT=0 lets slow kernels finish on a small build machine.
run cmake -S "$AOT_SRC" -B "$AOT_SRC/build" -G Ninja \
  -DCMAKE_INSTALL_PREFIX="$AOT_PREFIX" -DCMAKE_BUILD_TYPE=Release \
  -DAOTRITON_GPU_BUILD_TIMEOUT=0 "-DAOTRITON_TARGET_ARCH=$GPU_TARGET" \
  -DPython3_EXECUTABLE="$AOT_PY"
run env MAX_JOBS="$(max_jobs)" ninja -C "$AOT_SRC/build" install
if ! is_dry_run; then
  require_file "$AOT_PREFIX/lib/libaotriton_v2.so" "AOTriton library"
  printf '%s\n' "$pin" >"$AOT_PREFIX/.haloforge-commit"
  log_ok "AOTriton $pin for $GPU_TARGET in $AOT_PREFIX"
fi

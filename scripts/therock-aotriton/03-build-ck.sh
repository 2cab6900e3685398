#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# therock-aotriton, step "ck" (03-build-ck.sh, optional): build Composable Kernel for the GPU
# target and install it into the venv's ROCm. On gfx1151 this does not change SDPA: CK's
# fused MHA library is only emitted for CDNA (gfx90a/gfx94x/gfx95x), so
# preferred_rocm_fa_library() stays AOTriton even with TORCH_ROCM_FA_PREFER_CK=1.
#
# Usage: 03-build-ck.sh [--clean] [--prefix DIR] [--targets=LIST]
#   incremental by default; --clean starts the build directory afresh;
#   --prefix defaults to the venv's ROCm root ($ROCM_PATH), else /opt/rocm;
#   --targets defaults to GPU_TARGET.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=./common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
hf_init
aot_paths

clean=0 prefix='' targets=${GPU_TARGET:-gfx1151}
while (($#)); do
  case $1 in
    --clean) clean=1 && shift ;;
    --prefix) prefix=${2:?--prefix needs a directory} && shift 2 ;;
    --prefix=*) prefix=${1#*=} && shift ;;
    --targets) targets=${2:?--targets needs a list} && shift 2 ;;
    --targets=*) targets=${1#*=} && shift ;;
    -h | --help) sed -n '/^# Usage:/,/^set -Eeuo/{/^set/d;s/^# \{0,1\}//;p;}' "$HF_SCRIPT" && exit 0 ;;
    *) die "unknown option: $1 (see --help)" 2 ;;
  esac
done
require_env CK_REPO CK_REF
need_venv
# CK moved into the rocm-libraries monorepo; a rocm-X.Y.Z tag is not sure to exist for every
# release: ask the remote before cloning, and say which tags it has.
if ! is_dry_run; then
  git ls-remote --exit-code --tags "$CK_REPO" "$CK_REF" >/dev/null 2>&1 \
    || die "CK_REF=$CK_REF is not a tag of $CK_REPO; its rocm-* tags: $(git ls-remote --tags --refs "$CK_REPO" 'rocm-*' 2>/dev/null | sed 's#.*refs/tags/##' | sort -V | tail -n 5 | paste -sd' ')"
fi
need_tools git cmake ninja
aot_env
if [[ -z "$prefix" ]]; then
  prefix=${ROCM_PATH:-}
  [[ -n "$prefix" ]] || prefix=$("$AOT_PY" -m rocm_sdk path --root 2>/dev/null || echo /opt/rocm)
fi
src=$AOT_WORK/composable_kernel build=$AOT_WORK/composable_kernel/build
# ROCm's clang: amdclang++ in /opt/rocm-style trees, lib/llvm/bin in TheRock's SDK layout.
cxx=$prefix/bin/amdclang++ cc=$prefix/bin/amdclang
if [[ ! -x "$cxx" && -x "$prefix/lib/llvm/bin/clang++" ]]; then
  cxx=$prefix/lib/llvm/bin/clang++ cc=$prefix/lib/llvm/bin/clang
fi
log_warn "optional: CK's fused attention is gated to CDNA targets; on $targets SDPA keeps using AOTriton"
log_step "Composable Kernel $CK_REF for $targets into $prefix"
git_at "$src" "$CK_REPO" "$CK_REF"
if ((clean)); then
  run rm -rf "$build"
fi
# Vendor headers trip -Werror and -Wold-style-cast under ROCm's clang: warnings stay
# warnings (the guide's workaround).
run cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" \
  "-DGPU_TARGETS=$targets" -DBUILD_TESTING=OFF \
  "-DCMAKE_CXX_FLAGS=-Wno-error -Wno-error=old-style-cast"
run ninja -C "$build" -j "$(max_jobs)" install
is_dry_run || log_ok "CK installed in $prefix; for experiments on CDNA: export LD_LIBRARY_PATH=$prefix/lib:\$LD_LIBRARY_PATH TORCH_ROCM_FA_PREFER_CK=1"

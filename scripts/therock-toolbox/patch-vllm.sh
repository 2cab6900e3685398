#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Fail-closed patches of a vLLM source tree for a ROCm target vLLM may not list yet.
# Usage: patch-vllm.sh VLLM_SRC [GFX_TARGET]   (target default: $GPU_TARGET, else gfx1151)
#
# 1. CMakeLists.txt: GFX_TARGET in set(HIP_SUPPORTED_ARCHS "…"). v0.10.2 lacks gfx1151
#    ("gfx906;…;gfx1101;gfx1200;gfx1201", scripts/SOURCES.md); main has it since vLLM #25908.
# 2. The ROCm build requirements: requirements/build/rock.txt (TheRock's own, newer refs:
#    vllm-project/vllm 027281ae) when the ref has it, else requirements/build/rocm.txt
#    (since Apr 2026), else requirements/rocm-build.txt: no amdsmi (02-install-rocm.sh
#    installs the SDK's own) and no torch/torchvision/torchaudio/triton pins (the venv's
#    TheRock torch is the one). rock.txt pins TheRock's torch and newer build tools
#    (packaging>=26.2, setuptools>=83.0.0 at 027281ae): 05-build-vllm.sh checks its torch pin
#    against the venv's before use_existing_torch.py, and the file against python-pins.txt
#    before pip (lib.sh check_rock_torch, check_reqs_pins).
# Each prints applied / already present upstream; an anchor that moved stops with an error.

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

src=${1:?usage: patch-vllm.sh VLLM_SRC [GFX_TARGET]}
target=${2:-${GPU_TARGET:-gfx1151}}

patch_list_add vllm-hip-arch "$src/CMakeLists.txt" HIP_SUPPORTED_ARCHS "$target"

reqs=''
for f in requirements/build/rock.txt requirements/build/rocm.txt requirements/rocm-build.txt; do
  if [[ -f "$src/$f" ]]; then
    reqs=$src/$f
    break
  fi
done
if [[ -z "$reqs" ]]; then
  if is_dry_run; then
    reqs=$src/requirements/build/rocm.txt
  else
    die "patch vllm-rocm-build-reqs: anchor not found in $src: none of requirements/build/rock.txt, requirements/build/rocm.txt, requirements/rocm-build.txt exists"
  fi
fi
patch_drop_requirements vllm-rocm-build-reqs "$reqs" amdsmi torch torchvision torchaudio triton pytorch-triton-rocm
printf '%s\n' "$reqs" >"${HF_PATCH_REQS_OUT:-/dev/null}"

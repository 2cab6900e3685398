#!/usr/bin/env bats
# Tests of the therock-aotriton track's logic: the AOTriton pin reader on both forms of
# PyTorch's aotriton.cmake (testdata/), the FBGEMM GenAI guard patch, the resume stages'
# build_prod_wheels.py arguments, and "exactly the wheels built this run".
# shellcheck disable=SC2016

setup() {
  S=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
  D=$BATS_TEST_DIRNAME/testdata
  T=$BATS_TEST_TMPDIR
  export NO_COLOR=1 HALOFORGE_STATE_DIR=$T/state GPU_TARGET=gfx1151
  export THEROCK_INDEX_URL=https://repo.amd.com/rocm/whl-multi-arch/ ROCM_VERSION=7.14.0
  unset HALOFORGE_DRY_RUN
}

aot() { bash -c ". '$S/lib/common.sh'; . '$S/therock-aotriton/common.sh'; HALOFORGE_CACHE_DIR='$T/cache'; aot_paths; $1"; }

@test "aotriton_pin reads the plain 2025 form" {
  run aot "aotriton_pin '$D/aotriton.cmake.2025'"
  [ "$status" -eq 0 ]
  [ "$output" = 6fca155f4deeb8d9529326f7b69f350aeeb93477 ]
}

@test "aotriton_pin skips the 2026 form's environment override and reads the pin" {
  run aot "aotriton_pin '$D/aotriton.cmake.2026'"
  [ "$status" -eq 0 ]
  [ "$output" = 8fdb4a4353f95b88c9542f5e5637efc1e1e0e530 ]
}

@test "aotriton_pin fails without a 40-hex commit, and without the file" {
  printf 'set(__AOTRITON_CI_COMMIT "main")\n' >"$T/a.cmake"
  run aot "aotriton_pin '$T/a.cmake'"
  [ "$status" -eq 1 ]
  [[ "$output" == *"no set(__AOTRITON_CI_COMMIT"* ]]
  run aot "aotriton_pin '$T/none.cmake'"
  [ "$status" -eq 1 ]
}

@test "the FBGEMM GenAI guard: applied, then already present, CUDA file only" {
  f=$T/pt/aten/src/ATen/native/cuda/Blas.cpp
  mkdir -p "$(dirname "$f")"
  printf '#include <ATen/ATen.h>\n#ifdef USE_FBGEMM_GENAI\n#include <fbgemm_gpu/torch_ops.h>\n#endif\n' >"$f"
  run aot "patch_fbgemm_genai '$T/pt'"
  [ "$status" -eq 0 ]
  [[ "$output" == *"patch fbgemm-genai-guard: applied"* ]]
  [ "$(sed -n 2p "$f")" = '#if defined(USE_FBGEMM_GENAI) && __has_include(<fbgemm_gpu/torch_ops.h>)' ]
  run aot "patch_fbgemm_genai '$T/pt'"
  [[ "$output" == *"already present upstream"* ]]
}

@test "the FBGEMM GenAI guard is not needed where PyTorch has no FBGEMM GenAI, and fails closed on a changed file" {
  f=$T/pt/aten/src/ATen/native/cuda/Blas.cpp
  mkdir -p "$(dirname "$f")"
  printf '#include <ATen/ATen.h>\n' >"$f"
  run aot "patch_fbgemm_genai '$T/pt'"
  [ "$status" -eq 0 ]
  [[ "$output" == *"not needed"* ]]
  printf '#if USE_FBGEMM_GENAI_V2 // renamed upstream\n' >"$f"
  run aot "patch_fbgemm_genai '$T/pt'"
  [ "$status" -eq 1 ]
  [[ "$output" == *"anchor not found"* ]]
}

@test "a full run installs ROCm and builds triton, torch, audio and vision for gfx1151 only" {
  run aot "prod_wheels_args '' 0 0 0 | paste -sd' '"
  [ "$output" = "--pytorch-rocm-arch gfx1151 --output-dir $T/cache/work/pyout --build-triton --enable-pytorch-flash-attention-linux --no-enable-pytorch-fbgemm-genai-linux --install-rocm --index-url https://repo.amd.com/rocm/whl-multi-arch/ --rocm-sdk-version ==7.14.0 --rocm-extras device-gfx1151" ]
}

@test "resuming skips the ROCm install; at vision, audio too; --clean and --skip-* pass through" {
  run aot "prod_wheels_args pytorch 0 0 0 | paste -sd' '"
  [[ "$output" != *--install-rocm* ]]
  [[ "$output" != *--no-build-pytorch-audio* ]]
  run aot "prod_wheels_args vision 0 0 1 | paste -sd' '"
  [[ "$output" == *"--no-build-pytorch-audio --clean"* ]]
  run aot "prod_wheels_args rocm 0 1 0 | paste -sd' '"
  [[ "$output" == *"--install-rocm"*"--no-build-pytorch-vision"* ]]
  run aot "prod_wheels_args bogus 0 0 0"
  [ "$status" -ne 0 ]
}

@test "02 rejects an unknown stage with usage exit 2" {
  run bash "$S/therock-aotriton/02-build-pytorch-with-aotriton-gfx1151.sh" --continue nightly
  [ "$status" -eq 2 ]
  [[ "$output" == *"unknown stage 'nightly'"* ]]
  run bash "$S/therock-aotriton/02-build-pytorch-with-aotriton-gfx1151.sh" --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"--continue STAGE"* ]]
}

@test "wheels_since lists only this run's wheels for this Python" {
  out=$T/pyout
  mkdir -p "$out"
  : >"$out/torch-2.9.0+rocm7.14.0-cp312-cp312-linux_x86_64.whl"
  touch -d '2 hours ago' "$out/torch-2.9.0+rocm7.14.0-cp312-cp312-linux_x86_64.whl"
  touch -d '1 hour ago' "$T/stamp"
  : >"$out/torch-2.11.0+rocm7.14.0-cp312-cp312-linux_x86_64.whl"
  : >"$out/torchvision-0.26.0+rocm7.14.0-cp312-cp312-linux_x86_64.whl"
  : >"$out/torch-2.11.0+rocm7.14.0-cp313-cp313-linux_x86_64.whl"
  : >"$out/triton-3.5.0+rocm7.14.0-cp312-cp312-linux_x86_64.whl"
  run aot "wheels_since '$T/stamp' '$out' cp312"
  [ "$status" -eq 0 ]
  [ "$output" = "$(printf '%s\n' "$out/torch-2.11.0+rocm7.14.0-cp312-cp312-linux_x86_64.whl" "$out/torchvision-0.26.0+rocm7.14.0-cp312-cp312-linux_x86_64.whl")" ]
}

@test "install refuses a listed wheel that is gone or for another Python" {
  venv=$T/state/therock-aotriton/venv
  mkdir -p "$venv/bin"
  ln -s "$(command -v python3)" "$venv/bin/python"
  tag=$(python3 -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
  printf '%s\n' "$T/torch-1-cp27-cp27-linux_x86_64.whl" >"$T/state/therock-aotriton/wheels.txt"
  : >"$T/torch-1-cp27-cp27-linux_x86_64.whl"
  run bash "$S/therock-aotriton/04-install-wheels.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *"is not for this venv's Python ($tag)"* ]]
  printf '%s\n' "$T/gone.whl" >"$T/state/therock-aotriton/wheels.txt"
  run bash "$S/therock-aotriton/04-install-wheels.sh"
  [[ "$output" == *"listed wheel is gone"* ]]
}

@test "the python checks parse and backend-check demands AOTriton and flash attention" {
  python3 -c 'import ast, sys; [ast.parse(open(f).read(), f) for f in sys.argv[1:]]' "$S/therock-aotriton/backend-check.py" "$S/therock-aotriton/10-test_aotriton_direct.py" "$S/therock-aotriton/05-attention-bench.py"
  grep -q '"AOTriton" not in str(backend)' "$S/therock-aotriton/backend-check.py"
  grep -q 'can_use_flash_attention' "$S/therock-aotriton/backend-check.py"
  HALOFORGE_DRY_RUN=1 run bash "$S/therock-aotriton/05-attention-bench.sh"
  [[ "$output" == *"AMD_SERIALIZE_KERNEL=0"* ]]
}

@test "an unreachable wheel index fails the env step in seconds, before any venv exists" {
  start=$SECONDS
  THEROCK_INDEX_URL=https://127.0.0.1:9/rocm/ run bash "$S/therock-aotriton/00-setup-env.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *"No matching distribution found: the wheel index https://127.0.0.1:9/rocm/ is unreachable"* ]]
  [ ! -e "$T/state/therock-aotriton/venv" ]
  [ $((SECONDS - start)) -lt 30 ]
}

@test "N6: TheRock checks out the ROCm fork at PYTORCH_REF; audio and vision follow its related_commits" {
  HALOFORGE_DRY_RUN=1 run bash "$S/therock-aotriton/01-build-aotriton.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"pytorch_torch_repo.py checkout --gitrepo-origin https://github.com/ROCm/pytorch.git --repo-hashtag release/2.11"* ]]
  [[ "$output" == *"pytorch_audio_repo.py checkout --require-related-commit"* ]]
  [[ "$output" == *"pytorch_vision_repo.py checkout --require-related-commit"* ]]
  [[ "$output" == *"warning: PYTORCH_REF=release/2.11 is not a commit: a branch floats"* ]]
  [[ "$output" != *"--repo-hashtag v2.11.0"* ]]
  # A commit pin is taken as it is, without the warning.
  HALOFORGE_DRY_RUN=1 PYTORCH_REF=0123456789abcdef0123456789abcdef01234567 run bash "$S/therock-aotriton/01-build-aotriton.sh"
  [[ "$output" == *"--repo-hashtag 0123456789abcdef0123456789abcdef01234567"* ]]
  [[ "$output" != *"branch floats"* ]]
}

@test "U2: build_prod_wheels.py's pip gets PyPI beside AMD's index; your own PIP_* settings win" {
  unset PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_NO_INDEX
  HALOFORGE_DRY_RUN=1 run bash "$S/therock-aotriton/02-build-pytorch-with-aotriton-gfx1151.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"&& env PIP_EXTRA_INDEX_URL=https://pypi.org/simple "*"build_prod_wheels.py build "*"--install-rocm --index-url https://repo.amd.com/rocm/whl-multi-arch/"* ]]
  HALOFORGE_DRY_RUN=1 PIP_INDEX_URL=http://127.0.0.1:9/simple run bash "$S/therock-aotriton/02-build-pytorch-with-aotriton-gfx1151.sh"
  [[ "$output" == *"&& env PIP_EXTRA_INDEX_URL=http://127.0.0.1:9/simple "*"build_prod_wheels.py build"* ]]
  HALOFORGE_DRY_RUN=1 PIP_EXTRA_INDEX_URL=http://127.0.0.1:9/simple run bash "$S/therock-aotriton/02-build-pytorch-with-aotriton-gfx1151.sh"
  [[ "$output" == *"your PIP_EXTRA_INDEX_URL / PIP_NO_INDEX are kept"* ]]
  [[ "$output" != *"env PIP_EXTRA_INDEX_URL="* ]]
}

@test "row 27: a CK_REF that is not a tag of CK_REPO stops before any clone, naming the rocm-* tags it has (a real git repository)" {
  git init -q "$T/ck"
  git -C "$T/ck" -c user.email=t@t -c user.name=t commit -q --allow-empty -m one
  for tag in rocm-7.0.2 rocm-7.1.0 rocm-7.1.1 other-1; do git -C "$T/ck" tag "$tag"; done
  mkdir -p "$T/venv/bin" && ln -s "$(command -v python3)" "$T/venv/bin/python"
  CK_REPO=file://$T/ck CK_REF=rocm-7.14.0 THEROCK_AOTRITON_VENV=$T/venv run bash "$S/therock-aotriton/03-build-ck.sh"
  [ "$status" -ne 0 ]
  [[ "$output" == *"CK_REF=rocm-7.14.0 is not a tag of file://$T/ck; its rocm-* tags: rocm-7.0.2 rocm-7.1.0 rocm-7.1.1"* ]]
  [[ "$output" != *"other-1"* ]]
  [ ! -e "$T/state/therock-aotriton/ck" ]
}

@test "row 8: AOTriton without liblzma's development files stops with the package to install (a pkg-config stand-in)" {
  mkdir -p "$T/bin"
  printf '#!/bin/sh\nexit 1\n' >"$T/bin/pkg-config"
  for t in git cmake ninja; do command -v "$t" >/dev/null || printf '#!/bin/sh\nexit 0\n' >"$T/bin/$t"; done
  chmod +x "$T/bin"/*
  PATH=$T/bin:$PATH run bash "$S/therock-aotriton/01-build-aotriton.sh"
  [ "$status" -ne 0 ]
  [[ "$output" == *"AOTriton needs liblzma's development files (pkg-config finds no liblzma)"* ]]
  [[ "$output" == *"liblzma-dev"* || "$output" == *"xz-devel"* ]]
}

#!/usr/bin/env bats
# Tests of the legacy-gfx803 track's CMake >= 4 fixes (cmake4-fixes.sh) on a tree with the
# workflow's seven third_party files, their real cmake_minimum_required forms, and gloo's
# types.h; plus the dry run of the stages.

setup() {
  S=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
  R=$BATS_TEST_TMPDIR/pytorch
  export NO_COLOR=1
  mk() { mkdir -p "$(dirname "$R/$1")" && printf '%b' "$2" >"$R/$1"; }
  mk third_party/protobuf/cmake/CMakeLists.txt 'cmake_minimum_required(VERSION 3.1.3)\nproject(protobuf C CXX)\n'
  mk third_party/psimd/CMakeLists.txt 'CMAKE_MINIMUM_REQUIRED(VERSION 2.8.12 FATAL_ERROR)\r\nPROJECT(psimd C)\r\n'
  mk third_party/FP16/CMakeLists.txt 'CMAKE_MINIMUM_REQUIRED(VERSION 2.8.12 FATAL_ERROR)\n'
  mk third_party/NNPACK/CMakeLists.txt 'CMAKE_MINIMUM_REQUIRED(VERSION 3.5 FATAL_ERROR)\n'
  mk third_party/ittapi/CMakeLists.txt 'cmake_minimum_required(VERSION 2.8.12)\n'
  mk third_party/gloo/CMakeLists.txt 'cmake_minimum_required(VERSION 3.4.0 FATAL_ERROR)\n'
  mk third_party/ideep/mkl-dnn/CMakeLists.txt 'cmake_minimum_required(VERSION 2.8.11)\n'
  mk third_party/gloo/gloo/types.h '#pragma once\n\n#include <iostream>\n#include "gloo/common/common.h"\n'
}

fix() { sh "$S/legacy-gfx803/cmake4-fixes.sh" "$R"; }

@test "raises every listed minimum below 3.5 to 3.5 and adds <cstdint> to gloo" {
  run fix
  [ "$status" -eq 0 ]
  [ "$(grep -c ': applied' <<<"$output")" -eq 7 ]
  [[ "$output" == *"NNPACK/CMakeLists.txt: already present"* ]]
  [ "$(head -n 1 "$R/third_party/protobuf/cmake/CMakeLists.txt")" = 'cmake_minimum_required(VERSION 3.5)' ]
  [ "$(cat "$R/third_party/gloo/CMakeLists.txt")" = 'cmake_minimum_required(VERSION 3.5 FATAL_ERROR)' ]
  [ "$(cat "$R/third_party/ideep/mkl-dnn/CMakeLists.txt")" = 'cmake_minimum_required(VERSION 3.5)' ]
  [ "$(sed -n 3p "$R/third_party/gloo/gloo/types.h")" = '#include <cstdint>' ]
  # CRLF files keep their line endings.
  [ "$(head -n 1 "$R/third_party/psimd/CMakeLists.txt")" = $'CMAKE_MINIMUM_REQUIRED(VERSION 3.5 FATAL_ERROR)\r' ]
}

@test "a second run changes nothing and says so" {
  fix
  before=$(find "$R" -type f -exec sha256sum {} + | sort)
  run fix
  [ "$status" -eq 0 ]
  [ "$(grep -c 'already present' <<<"$output")" -eq 8 ]
  [ "$(find "$R" -type f -exec sha256sum {} + | sort)" = "$before" ]
}

@test "one missing file fails closed: nothing at all is written" {
  rm "$R/third_party/ittapi/CMakeLists.txt"
  before=$(find "$R" -type f -exec sha256sum {} + | sort)
  run fix
  [ "$status" -eq 1 ]
  [[ "$output" == *"ittapi/CMakeLists.txt: anchor not found"* ]]
  [[ "$output" == *"nothing changed"* ]]
  [ "$(find "$R" -type f -exec sha256sum {} + | sort)" = "$before" ]
}

@test "a file without cmake_minimum_required is an anchor failure" {
  printf 'project(x)\n' >"$R/third_party/FP16/CMakeLists.txt"
  run fix
  [ "$status" -eq 1 ]
  [[ "$output" == *"FP16/CMakeLists.txt: anchor not found"* ]]
}

@test "a newer minimum or a range is left as it is" {
  printf 'cmake_minimum_required(VERSION 3.18...3.28)\n' >"$R/third_party/FP16/CMakeLists.txt"
  run fix
  [ "$status" -eq 0 ]
  [ "$(cat "$R/third_party/FP16/CMakeLists.txt")" = 'cmake_minimum_required(VERSION 3.18...3.28)' ]
}

@test "stages build on each other in cache order; torchvision gets a clean environment" {
  export HALOFORGE_DRY_RUN=1 HALOFORGE_STATE_DIR=$BATS_TEST_TMPDIR/state
  for s in 01-build-pytorch 02-build-torchvision 03-build-torchaudio; do
    run bash "$S/legacy-gfx803/$s.sh"
    [ "$status" -eq 0 ]
  done
  [[ "$output" == *"--target audio"* ]]
  df=$S/../toolbox/Dockerfile_rocm64_pytorch
  # The torch stage comes first and its source tree is gone before vision builds.
  # shellcheck disable=SC2016 # the Dockerfile's own ${…}, matched literally
  [ "$(grep -n '^FROM' "$df" | head -n 1 | cut -d: -f2-)" = 'FROM ${GFX803_LOCAL_BASE_IMAGE} AS torch' ]
  grep -q 'pip install --constraint /haloforge/python-pins.txt /wheels/torch-\*.whl && rm -rf /pytorch' "$df"
  grep -q 'PYTHONNOUSERSITE=1 PYTHONPATH= FORCE_CUDA=1' "$df"
}

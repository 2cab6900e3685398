#!/usr/bin/env bats
# Tests of the source-stable track: build_pipeline.sh's arguments (defaults from
# versions.env, overrides, usage errors, the refusal of gfx1151 with a ROCm 6 torch), the
# vLLM architecture patcher on the real CMakeLists lines of v0.10.2 and of 2026 main
# (scripts/SOURCES.md), the lock check, and venv-amdsmi.sh in a real venv.
# shellcheck disable=SC2016

setup() {
  S=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
  T=$BATS_TEST_TMPDIR
  # The track is not for gfx1151 (versions.env's GPU_TARGET): the builds below are for a
  # GPU its torch has kernels for.
  export NO_COLOR=1 HALOFORGE_STATE_DIR=$T/state HALOFORGE_DRY_RUN=1 GPU_TARGET=gfx1100
  V0102='set(HIP_SUPPORTED_ARCHS "gfx906;gfx908;gfx90a;gfx942;gfx950;gfx1030;gfx1100;gfx1101;gfx1200;gfx1201")'
  MAIN2026='set(HIP_SUPPORTED_ARCHS "gfx906;gfx908;gfx90a;gfx942;gfx950;gfx1030;gfx1100;gfx1101;gfx1102;gfx1103;gfx1150;gfx1151;gfx1152;gfx1153;gfx1200;gfx1201")'
}

pipeline() { bash "$S/source-stable/build_pipeline.sh" "$@"; }
patcher() { sh "$S/source-stable/patch-vllm-arch.sh" "$1" gfx1151 "$S/lib/list_add.awk"; }

@test "--help lists every option with its pin and exits 0" {
  run pipeline --help
  [ "$status" -eq 0 ]
  for opt in --base-image --rocm-version --torch-version --torch-index-url --vllm-ref --fa-ref --gpu-target --image --jobs --engine; do
    [[ "$output" == *"$opt"* ]]
  done
  [[ "$output" == *"[SOURCE_VLLM_REF]"* ]]
}

@test "no arguments: the build uses exactly the versions.env pins" {
  run pipeline
  [ "$status" -eq 0 ]
  while IFS='=' read -r name value; do
    [[ "$output" == *"--build-arg $name=$value "* ]]
  done < <(grep -E '^(SOURCE_(BASE_IMAGE|ROCM_VERSION|TORCH_VERSION|TORCH_INDEX_URL|VLLM_REF|FLASH_ATTENTION_REF)|VLLM_REPO|FLASH_ATTENTION_REPO)=' "$S/../versions.env")
  [[ "$output" == *"-t localhost/haloforge/vllm-source-stable:0.10.2 "* ]]
  [[ "$output" == *"Containerfile.source-stable"* ]]
}

@test "arguments override pins, in both --opt value and --opt=value forms" {
  run pipeline --vllm-ref 0123456789abcdef0123456789abcdef01234567 --torch-version=2.7.1 --image localhost/x:y --jobs 3 --no-cache
  [ "$status" -eq 0 ]
  [[ "$output" == *"--build-arg SOURCE_VLLM_REF=0123456789abcdef0123456789abcdef01234567 "* ]]
  [[ "$output" == *"--build-arg SOURCE_TORCH_VERSION=2.7.1 "* ]]
  [[ "$output" == *"-t localhost/x:y "* ]]
  [[ "$output" == *"--build-arg MAX_JOBS=3 --no-cache "* ]]
}

@test "a tag instead of a commit is built but flagged as not reproducible" {
  run pipeline --vllm-ref v0.10.2
  [ "$status" -eq 0 ]
  [[ "$output" == *"SOURCE_VLLM_REF=v0.10.2 is not a commit SHA"* ]]
}

@test "bad usage exits 2 before anything runs" {
  run pipeline --bogus x
  [ "$status" -eq 2 ]
  [[ "$output" == *"unknown option: --bogus"* ]]
  run pipeline --jobs many
  [ "$status" -eq 2 ]
  run pipeline --vllm-ref
  [ "$status" -eq 2 ]
  [[ "$output" == *"--vllm-ref needs a value"* ]]
  run pipeline --torch-version 'two; rm -rf /'
  [ "$status" -eq 2 ]
  run pipeline stray
  [ "$status" -eq 2 ]
  [[ "$output" != *"[dry-run]"* ]]
}

@test "patcher: v0.10.2's list gets gfx1151 in target order" {
  printf 'cmake_minimum_required(VERSION 3.26)\n%s\n' "$V0102" >"$T/CMakeLists.txt"
  run patcher "$T/CMakeLists.txt"
  [ "$status" -eq 0 ]
  [[ "$output" == "patch vllm-hip-archs: applied"* ]]
  grep -qF 'gfx1100;gfx1101;gfx1151;gfx1200;gfx1201")' "$T/CMakeLists.txt"
  run patcher "$T/CMakeLists.txt"
  [[ "$output" == "patch vllm-hip-archs: already present upstream"* ]]
}

@test "patcher: 2026 main already lists gfx1151 and is left byte for byte" {
  printf '%s\n' "$MAIN2026" >"$T/CMakeLists.txt"
  before=$(sha256sum <"$T/CMakeLists.txt")
  run patcher "$T/CMakeLists.txt"
  [ "$status" -eq 0 ]
  [[ "$output" == *"already present upstream"* ]]
  [ "$(sha256sum <"$T/CMakeLists.txt")" = "$before" ]
}

@test "patcher: no anchor fails closed and leaves the file alone; CRLF is kept" {
  printf 'set(SOME_OTHER "gfx90a")\n' >"$T/CMakeLists.txt"
  run patcher "$T/CMakeLists.txt"
  [ "$status" -eq 1 ]
  [[ "$output" == *"anchor not found"* ]]
  [ "$(cat "$T/CMakeLists.txt")" = 'set(SOME_OTHER "gfx90a")' ]
  printf '%s\r\n' "$V0102" >"$T/crlf.txt"
  run patcher "$T/crlf.txt"
  [ "$status" -eq 0 ]
  grep -q 'gfx1151;gfx1200;gfx1201")'$'\r''$' "$T/crlf.txt"
  run patcher "$T/missing.txt"
  [ "$status" -eq 1 ]
}

@test "check_lock accepts a ROCm freeze and rejects a CPU torch or a missing vllm" {
  chk() { bash -c ". '$S/lib/common.sh'; . '$S/source-stable/lock.sh'; check_lock \"\$1\"" _ "$1"; }
  good=$'flash_attn==2.7.0\ntorch==2.8.0+rocm6.4\nvllm==0.10.2+rocm644'
  run chk "$good"
  [ "$status" -eq 0 ]
  run chk $'torch==2.8.0\nvllm==0.10.2\nflash_attn==2.7.0'
  [ "$status" -eq 1 ]
  [[ "$output" == *"not a ROCm build"* ]]
  run chk $'torch==2.8.0+rocm6.4\nflash_attn==2.7.0'
  [[ "$output" == *"no vllm line"* ]]
}

@test "BREAKS #3: the image's requirements filter, run with real pip on a tree with -r includes" {
  [[ -f /usr/share/python-wheels/wheel-0.38.4-py3-none-any.whl ]] || skip "needs Debian's python3-wheel-whl"
  # vLLM v0.10.2-era layout (4fdd6f5c): requirements/rocm-build.txt starts with -r common.txt.
  local tree=$BATS_TEST_TMPDIR/vllm
  mkdir -p "$tree/requirements"
  printf 'wheel\n' >"$tree/requirements/common.txt"
  printf -- '-r common.txt\n--extra-index-url https://download.pytorch.org/whl/rocm6.3\ntorch==2.8.0\ntorchvision==0.23.0\ntorchaudio==2.8.0\ntriton==3.3.0\ncmake>=3.26.1\namdsmi==6.2.4\nsetuptools\n' >"$tree/requirements/rocm-build.txt"
  printf 'wheel==0.38.4\nsetuptools==66.1.1\n' >"$BATS_TEST_TMPDIR/pins.txt"
  # The Containerfile's own lines, from `req=` to the pip install of the filtered file.
  snippet=$(sed -n '/&& req=requirements\/rocm-build.txt/,/-r "\$filtered"/p' "$BATS_TEST_DIRNAME/../../toolbox/Containerfile.source-stable" \
    | sed -e 's/^[[:space:]]*&& //' -e 's/ \\$//' -e "s#/haloforge/python-pins.txt#$BATS_TEST_TMPDIR/pins.txt#")
  [ -n "$snippet" ]
  cd "$tree"
  PIP_NO_INDEX=1 PIP_FIND_LINKS=/usr/share/python-wheels run sh -ec "$(printf '%s\n' "$snippet" | sed 's/pip install/python3 -m pip install --dry-run/')"
  [ "$status" -eq 0 ] || {
    echo "$output"
    false
  }
  [[ "$output" == *"Would install"*"wheel-0.38.4"* || "$output" == *"already satisfied"* ]]
  filtered=$tree/requirements/haloforge-build.txt
  [ "$(cat "$filtered")" = $'-r common.txt\nsetuptools' ]
}

@test "BREAKS N1: gfx1151 with PyTorch's ROCm 6.4 index is refused before any download (exit 2)" {
  GPU_TARGET=gfx1151 run pipeline
  [ "$status" -eq 2 ]
  [[ "$output" == *"error: source-stable cannot build for GPU_TARGET=gfx1151 with torch from https://download.pytorch.org/whl/rocm6.4"* ]]
  [[ "$output" == *"use the therock-toolbox track"* ]]
  [[ "$output" != *"[dry-run]"* ]]
  GPU_TARGET=gfx1150 run pipeline --torch-index-url https://download.pytorch.org/whl/rocm6.3/
  [ "$status" -eq 2 ]
  # A torch index that can carry gfx115x kernels is let through (the image checks them).
  GPU_TARGET=gfx1151 run pipeline --torch-index-url https://download.pytorch.org/whl/rocm7.1
  [ "$status" -eq 0 ]
  [[ "$output" == *"--build-arg GPU_TARGET=gfx1151"* ]]
}

# standin_root: a directory standing in for the image's / with Fedora's layout of the amdsmi
# package (site-packages/amdsmi with its library inside); the package is a stand-in that
# records it was imported.
standin_root() {
  mkdir -p "$T/root/usr/lib/python3.14/site-packages/amdsmi"
  printf 'STANDIN = "haloforge stand-in for Fedora amdsmi"\n' >"$T/root/usr/lib/python3.14/site-packages/amdsmi/__init__.py"
  : >"$T/root/usr/lib/python3.14/site-packages/amdsmi/libamd_smi.so"
}

@test "row 15: venv-amdsmi.sh makes Fedora's system-site amdsmi importable by the venv" {
  python3 -m venv "$T/venv" || skip "python3 -m venv unavailable (apt python3-venv)"
  standin_root
  PATH=$T/venv/bin:$PATH run "$T/venv/bin/python" -c 'import amdsmi'
  [ "$status" -ne 0 ]
  PATH=$T/venv/bin:$PATH run sh "$S/source-stable/venv-amdsmi.sh" "$T/root"
  [ "$status" -eq 0 ]
  [[ "$output" == *"amdsmi imports in the venv from $T/venv/lib/python3"*"/site-packages/amdsmi"* ]]
  run "$T/venv/bin/python" -c 'import amdsmi; print(amdsmi.STANDIN)'
  [ "$output" = "haloforge stand-in for Fedora amdsmi" ]
  [ -f "$(echo "$T"/venv/lib/python3*/site-packages/amdsmi/libamd_smi.so)" ]
}

@test "row 15: no amdsmi package, or one that does not import, stops the image build" {
  python3 -m venv "$T/venv" || skip "python3 -m venv unavailable (apt python3-venv)"
  mkdir -p "$T/empty"
  PATH=$T/venv/bin:$PATH run sh "$S/source-stable/venv-amdsmi.sh" "$T/empty"
  [ "$status" -eq 1 ]
  [[ "$output" == *"error: no amdsmi Python package under $T/empty/usr/lib*/python3*/site-packages"* ]]
  standin_root
  printf 'raise ImportError("libamd_smi.so: cannot open shared object file")\n' >"$T/root/usr/lib/python3.14/site-packages/amdsmi/__init__.py"
  PATH=$T/venv/bin:$PATH run sh "$S/source-stable/venv-amdsmi.sh" "$T/root"
  [ "$status" -eq 1 ]
  [[ "$output" == *"error: amdsmi from $T/root/usr/lib/python3.14/site-packages/amdsmi does not import"* ]]
}

@test "row 15: the image runs venv-amdsmi.sh after the venv is made and before vLLM" {
  cf=$BATS_TEST_DIRNAME/../../toolbox/Containerfile.source-stable
  venv=$(grep -n -- '-m venv /opt/venv' "$cf" | cut -d: -f1)
  smi=$(grep -n 'RUN sh /haloforge/venv-amdsmi.sh' "$cf" | cut -d: -f1)
  vllm=$(grep -n 'git init -q /src/vllm' "$cf" | cut -d: -f1)
  [ -n "$venv" ] && [ -n "$smi" ] && [ -n "$vllm" ]
  [ "$venv" -lt "$smi" ] && [ "$smi" -lt "$vllm" ]
  grep -q 'COPY venv-amdsmi.sh /haloforge/' "$cf"
  grep -q 'venv-amdsmi.sh' "$S/source-stable/build_pipeline.sh"
}

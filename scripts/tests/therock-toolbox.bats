#!/usr/bin/env bats
# Tests of the therock-toolbox step scripts that need no box: the fail-closed patchers
# (vLLM's HIP arch list and build requirements, TheRock's rocm_sdk preload) on the real
# upstream lines (scripts/SOURCES.md), the dry run of every step, and the track's git checkout and
# wheel cache helpers on a local repository and an offline-buildable package.
# Single-quoted $ below is shell code for the child on purpose.
# shellcheck disable=SC2016,SC2030,SC2031

V0102='set(HIP_SUPPORTED_ARCHS "gfx906;gfx908;gfx90a;gfx942;gfx950;gfx1030;gfx1100;gfx1101;gfx1200;gfx1201")'
V0102_PATCHED='set(HIP_SUPPORTED_ARCHS "gfx906;gfx908;gfx90a;gfx942;gfx950;gfx1030;gfx1100;gfx1101;gfx1151;gfx1200;gfx1201")'
MAIN2026='set(HIP_SUPPORTED_ARCHS "gfx906;gfx908;gfx90a;gfx942;gfx950;gfx1030;gfx1100;gfx1101;gfx1102;gfx1103;gfx1150;gfx1151;gfx1152;gfx1153;gfx1200;gfx1201")'

setup() {
  TRACK=$(cd "$BATS_TEST_DIRNAME/../therock-toolbox" && pwd)
  LIB=$(cd "$BATS_TEST_DIRNAME/../lib" && pwd)
  export TRACK LIB NO_COLOR=1
  T=$BATS_TEST_TMPDIR
  unset HALOFORGE_DRY_RUN HALOFORGE_ALLOW_NO_GPU HALOFORGE_DISTROBOX_ROOT CONTAINER_ID
  export HALOFORGE_STATE_DIR=$T/state
}

# vllm_tree DIR ARCHLINE [REQS_PATH]: a vLLM source tree with the lines that matter.
vllm_tree() {
  mkdir -p "$1/requirements/build"
  printf 'cmake_minimum_required(VERSION 3.26)\nproject(vllm_extensions LANGUAGES CXX)\n\n# Supported AMD GPU architectures.\n%s\n\nset(CUDA_SUPPORTED_ARCHS "7.0;8.0")\n' "$2" >"$1/CMakeLists.txt"
  printf -- '-r ../common.txt\n--extra-index-url https://download.pytorch.org/whl/rocm6.3\ntorch==2.8.0\ntorchvision==0.23.0\ntriton==3.4.0\ncmake>=3.26.1\nsetuptools-scm>=8\namdsmi==6.2.4\nwheel\n' >"$1/${3:-requirements/build/rocm.txt}"
}

@test "vLLM v0.10.2 arch list without gfx1151: applied, in target order" {
  vllm_tree "$T/v" "$V0102"
  run "$TRACK/patch-vllm.sh" "$T/v" gfx1151
  [ "$status" -eq 0 ]
  [[ "$output" == *"patch vllm-hip-arch: applied ($T/v/CMakeLists.txt: gfx1151 added to HIP_SUPPORTED_ARCHS)"* ]]
  grep -qxF "$V0102_PATCHED" "$T/v/CMakeLists.txt"
  grep -qxF 'set(CUDA_SUPPORTED_ARCHS "7.0;8.0")' "$T/v/CMakeLists.txt"
  [ "$(wc -l <"$T/v/CMakeLists.txt")" -eq 7 ]
}

@test "re-running the vLLM patcher reports already present and changes nothing" {
  vllm_tree "$T/v" "$V0102"
  "$TRACK/patch-vllm.sh" "$T/v" gfx1151
  cp "$T/v/CMakeLists.txt" "$T/before"
  run "$TRACK/patch-vllm.sh" "$T/v" gfx1151
  [ "$status" -eq 0 ]
  [[ "$output" == *"patch vllm-hip-arch: already present upstream"* ]]
  [[ "$output" == *"patch vllm-rocm-build-reqs: already present upstream"* ]]
  cmp "$T/before" "$T/v/CMakeLists.txt"
}

@test "vLLM 2026 main lists gfx1151 already: already present upstream, file untouched" {
  vllm_tree "$T/v" "$MAIN2026"
  cp "$T/v/CMakeLists.txt" "$T/before"
  run "$TRACK/patch-vllm.sh" "$T/v" gfx1151
  [ "$status" -eq 0 ]
  [[ "$output" == *"patch vllm-hip-arch: already present upstream or from an earlier run ($T/v/CMakeLists.txt: gfx1151 is in HIP_SUPPORTED_ARCHS)"* ]]
  cmp "$T/before" "$T/v/CMakeLists.txt"
}

@test "vLLM arch list anchor missing: non-zero, clear error, file untouched" {
  vllm_tree "$T/v" 'list(APPEND HIP_ARCHS gfx906 gfx1100)'
  cp "$T/v/CMakeLists.txt" "$T/before"
  run "$TRACK/patch-vllm.sh" "$T/v" gfx1151
  [ "$status" -ne 0 ]
  [[ "$output" == *"error: patch vllm-hip-arch: anchor not found in $T/v/CMakeLists.txt: set(HIP_SUPPORTED_ARCHS"* ]]
  cmp "$T/before" "$T/v/CMakeLists.txt"
  [ -z "$(find "$T/v" -name '*.hfpatch.*')" ]
}

@test "vLLM CMakeLists with CRLF line ends: applied, CRLF kept on every line" {
  vllm_tree "$T/v" "$V0102"
  sed -i 's/$/\r/' "$T/v/CMakeLists.txt"
  run "$TRACK/patch-vllm.sh" "$T/v" gfx1151
  [ "$status" -eq 0 ]
  [[ "$output" == *"patch vllm-hip-arch: applied"* ]]
  grep -qxF "$V0102_PATCHED"$'\r' "$T/v/CMakeLists.txt"
  [ "$(grep -c $'\r$' "$T/v/CMakeLists.txt")" -eq "$(wc -l <"$T/v/CMakeLists.txt")" ]
}

@test "another target goes to its place in the list" {
  vllm_tree "$T/v" "$V0102"
  run "$TRACK/patch-vllm.sh" "$T/v" gfx803
  [ "$status" -eq 0 ]
  grep -qF '"gfx803;gfx906;gfx908;' "$T/v/CMakeLists.txt"
  run "$TRACK/patch-vllm.sh" "$T/v" gfx1250
  grep -qF 'gfx1201;gfx1250")' "$T/v/CMakeLists.txt"
}

@test "ROCm build requirements: amdsmi and torch pins dropped, in either file layout" {
  for layout in requirements/build/rocm.txt requirements/rocm-build.txt; do
    rm -rf "$T/v"
    mkdir -p "$T/v/requirements"
    vllm_tree "$T/v" "$V0102" "$layout"
    [ "$layout" = requirements/build/rocm.txt ] || rm -rf "$T/v/requirements/build"
    run "$TRACK/patch-vllm.sh" "$T/v" gfx1151
    [ "$status" -eq 0 ]
    [[ "$output" == *"patch vllm-rocm-build-reqs: applied ($T/v/$layout: removed torch==2.8.0, torchvision==0.23.0, triton==3.4.0, amdsmi==6.2.4)"* ]]
    [ "$(cat "$T/v/$layout")" = $'-r ../common.txt\n--extra-index-url https://download.pytorch.org/whl/rocm6.3\ncmake>=3.26.1\nsetuptools-scm>=8\nwheel' ]
  done
}

@test "no ROCm build requirements file at all: anchor not found" {
  vllm_tree "$T/v" "$V0102"
  rm "$T/v/requirements/build/rocm.txt"
  run "$TRACK/patch-vllm.sh" "$T/v" gfx1151
  [ "$status" -eq 1 ]
  [[ "$output" == *"none of requirements/build/rock.txt, requirements/build/rocm.txt, requirements/rocm-build.txt exists"* ]]
}

@test "the patcher changes nothing in a dry run" {
  vllm_tree "$T/v" "$V0102"
  cp "$T/v/CMakeLists.txt" "$T/before"
  HALOFORGE_DRY_RUN=1 run "$TRACK/patch-vllm.sh" "$T/v" gfx1151
  [ "$status" -eq 0 ]
  [[ "$output" == *"[dry-run] patch vllm-hip-arch: would apply"* ]]
  cmp "$T/before" "$T/v/CMakeLists.txt"
}

# rocm_sdk_init FILE DEFAULT: TheRock's rocm_sdk/__init__.py preload signature (scripts/SOURCES.md).
rocm_sdk_init() {
  cat >"$1" <<-PY
		def preload_libraries(*shortnames, rtld_global: bool = $2):
		    pass

		def initialize_process(*, preload_shortnames=(), rtld_global: bool = $2):
		    preload_libraries(*preload_shortnames, rtld_global=rtld_global)
	PY
}

@test "rocm_sdk preload patch: applied, then already present" {
  rocm_sdk_init "$T/init.py" True
  run bash -c '. "$LIB/common.sh"; patch_replace_once rocm-sdk-preload-rtld-local "$1" "rtld_global: bool = True" "rtld_global: bool = False"' _ "$T/init.py"
  [ "$status" -eq 0 ]
  [ "$output" = "patch rocm-sdk-preload-rtld-local: applied ($T/init.py)" ]
  [ "$(grep -c 'rtld_global: bool = False' "$T/init.py")" -eq 2 ]
  [ "$(grep -c 'bool = True' "$T/init.py")" -eq 0 ]
  run bash -c '. "$LIB/common.sh"; patch_replace_once rocm-sdk-preload-rtld-local "$1" "rtld_global: bool = True" "rtld_global: bool = False"' _ "$T/init.py"
  [ "$status" -eq 0 ]
  [ "$output" = "patch rocm-sdk-preload-rtld-local: already present upstream or from an earlier run ($T/init.py)" ]
}

@test "rocm_sdk preload patch: anchor not found fails closed" {
  printf 'def preload_libraries(*shortnames, mode=0):\n    pass\n' >"$T/init.py"
  cp "$T/init.py" "$T/before"
  run bash -c '. "$LIB/common.sh"; patch_replace_once rocm-sdk-preload-rtld-local "$1" "rtld_global: bool = True" "rtld_global: bool = False" || echo "rc=$? result=$PATCH_RESULT"' _ "$T/init.py"
  [[ "$output" == *"error: patch rocm-sdk-preload-rtld-local: anchor not found in $T/init.py: rtld_global: bool = True"* ]]
  [[ "$output" == *"rc=1 result=missing"* ]]
  cmp "$T/before" "$T/init.py"
}

# dry STEP: the step's dry run, as haloforge build --dry-run runs it.
dry() {
  HALOFORGE_DRY_RUN=1 "$TRACK/$1"
}

@test "dry run of the toolbox step shows distrobox create with the GPU devices" {
  run dry 00-setup-toolbox.sh
  [ "$status" -eq 0 ]
  [[ "$output" == *"[dry-run] distrobox create --yes --name haloforge-therock --image docker.io/library/ubuntu:24.04 --additional-flags '--device /dev/kfd --device /dev/dri --group-add keep-groups --security-opt seccomp=unconfined'"* ]]
  [[ "$output" == *"[dry-run] distrobox enter haloforge-therock -- true"* ]]
}

@test "BREAKS #5: on a docker manager the box gets numeric groups, never podman's keep-groups" {
  mkdir -p "$T/bin"
  printf '#!/bin/sh\nexit 1\n' >"$T/bin/podman"
  chmod +x "$T/bin/podman"
  DBX_CONTAINER_MANAGER=docker HALOFORGE_ALLOW_NO_GPU=0 run dry 00-setup-toolbox.sh
  [ "$status" -eq 0 ]
  create=$(grep '^\[dry-run\] distrobox create' <<<"$output")
  [[ "$create" == *"--device /dev/kfd --device /dev/dri"* ]]
  [[ "$create" != *keep-groups* ]]
  gid=$(getent group video | cut -d: -f3)
  [ -z "$gid" ] || [[ "$create" == *"--group-add $gid"* ]]
}

@test "BREAKS #6: a rootful box gets passwordless sudo for the unattended steps" {
  HALOFORGE_DISTROBOX_ROOT=1 run dry 00-setup-toolbox.sh
  [ "$status" -eq 0 ]
  [[ "$output" == *"exec --user root haloforge-therock sh -c"*"NOPASSWD:ALL"*"/etc/sudoers.d/haloforge"* ]]
  HALOFORGE_DISTROBOX_ROOT=0 run dry 00-setup-toolbox.sh
  [[ "$output" != *"sudoers.d/haloforge"* ]]
}

# standin_venv: a real venv whose torch, flash_attn and vllm are the stand-ins of
# testdata/standin-gpu-stack (no GPU and no vLLM can exist here).
standin_venv() {
  python3 -m venv "$T/venv" || skip "python3 -m venv unavailable (apt python3-venv)"
  "$T/venv/bin/python" -c 'import site; print(site.getsitepackages()[0])' >"$T/sp"
  printf '%s\n' "$BATS_TEST_DIRNAME/testdata/standin-gpu-stack" >"$(cat "$T/sp")/standin.pth"
  export VENV_DIR=$T/venv HALOFORGE_RESULT_FILE=$T/results.tsv HALOFORGE_IN_BOX=1 VERIFY_MODEL=
  export HALOFORGE_RUN_DIR=$T/state/runs/r1 HALOFORGE_TRACK=therock-toolbox
}

# need_haloforge: the real haloforge binary (built once per file, or HF_TEST_BIN) as the step's
# HALOFORGE_BIN, so the answers the stand-in vLLM gives are judged by the real haloforge verify.
need_haloforge() {
  local bin=${HF_TEST_BIN:-$BATS_FILE_TMPDIR/haloforge}
  if [[ ! -x $bin ]]; then
    command -v go >/dev/null || skip "no go toolchain to build haloforge"
    (cd "$BATS_TEST_DIRNAME/../.." && go build -o "$bin" ./cmd/haloforge) || return 1
  fi
  export HALOFORGE_BIN=$bin
}

@test "BREAKS #2: 06 fails when vLLM's platform is not ROCm (a stand-in reporting UnspecifiedPlatform)" {
  standin_venv
  STANDIN_VLLM_PLATFORM=UnspecifiedPlatform run "$TRACK/06-verify.sh"
  [ "$status" -ne 0 ]
  [[ "$output" == *"FAIL: vLLM runs on UnspecifiedPlatform, not ROCm"* ]]
  [ ! -e "$HALOFORGE_STATE_DIR/therock-toolbox/requirements.lock" ]
  run grep -q 'vLLM' "$T/results.tsv"
  [ "$status" -ne 0 ]
}

@test "06 on a working stack records what it proved, and what it could not (no model)" {
  standin_venv
  run "$TRACK/06-verify.sh"
  [ "$status" -eq 0 ] || {
    echo "$output"
    false
  }
  [ "$(cut -f1 "$T/results.tsv" | paste -sd,)" = verified,verified,verified,verified,not-verified ]
  grep -q $'^verified\ttorch .* ran a matmul on gfx1151' "$T/results.tsv"
  grep -q $'^verified\tflash-attention .* forward pass on gfx1151' "$T/results.tsv"
  grep -q $'^verified\tvLLM .* detects the ROCm platform (RocmPlatform)' "$T/results.tsv"
  grep -q $'^not-verified\tvLLM answers: no model given' "$T/results.tsv"
}

@test "W1: 06 judges vLLM's answers with haloforge verify, eager and compiled" {
  standin_venv
  need_haloforge
  mkdir -p "$T/model"
  VERIFY_MODEL=$T/model run "$TRACK/06-verify.sh"
  [ "$status" -eq 0 ] || {
    echo "$output"
    false
  }
  grep -q $'^verified\tvLLM answers, eager: right: the 4 known answers are there (Paris, 42, Friday, Tokyo)' "$T/results.tsv"
  grep -q $'^verified\tvLLM answers, compiled: right: the 4 known answers are there' "$T/results.tsv"
  # the stand-in model is no file to run on the CPU: said, and the known answers ran instead
  [[ "$output" == *"does not fit on the CPU next to the rest here: the known-answer check runs instead"* ]]
  # the files haloforge judged, in the answers format, and the verdict kept for bench
  grep -q '"schema": "haloforge/verify-answers/v1"' "$HALOFORGE_RUN_DIR/vllm-compiled.json" || grep -q '"schema":"haloforge/verify-answers/v1"' "$HALOFORGE_RUN_DIR/vllm-compiled.json"
  grep -q '"verdict": "right"' "$HALOFORGE_STATE_DIR/verify/last/therock-toolbox.json"
  run grep -q not-verified "$T/results.tsv"
  [ "$status" -ne 0 ]
}

@test "W1: a stack right in eager mode but answering \"!\" compiled (vllm serve's path) fails 06" {
  standin_venv
  need_haloforge
  mkdir -p "$T/model"
  VERIFY_MODEL=$T/model STANDIN_VLLM_COMPILED=bangs run "$TRACK/06-verify.sh"
  [ "$status" -ne 0 ]
  grep -q $'^verified\tvLLM answers, eager: right: ' "$T/results.tsv"
  grep -q $'^not-verified\tvLLM answers, compiled: WRONG OUTPUT: prompt 1 (capital, "The capital of France is"): degenerate output: a run of 8 or more "!"' "$T/results.tsv"
  [[ "$output" == *"vLLM's answers are wrong on this stack"* ]]
  [ ! -e "$HALOFORGE_STATE_DIR/therock-toolbox/requirements.lock" ]
}

@test "B1: the venv's triton must still be TheRock's after a build step" {
  standin_venv
  mkdir -p "$T/bin"
  printf '#!/bin/sh\nprintf "%%s\\n" torch==2.11.0+rocm7.14.0 "${STANDIN_TRITON:-triton==3.5.0+rocm7.14.0}"\n' >"$T/bin/pip-standin"
  chmod +x "$T/bin/pip-standin"
  printf 'torch==2.11.0+rocm7.14.0\ntriton==3.5.0+rocm7.14.0\n' >"$VENV_DIR/haloforge-constraints.txt"
  lt() { bash -c ". '$LIB/common.sh'; . '$TRACK/lib.sh'; PIP=('$T/bin/pip-standin'); PY=python3; $1"; }
  run lt triton_kept
  [ "$status" -eq 0 ]
  [[ "$output" == *"triton is still TheRock's: triton==3.5.0+rocm7.14.0"* ]]
  # what AITER's setup.py leaves without AITER_USE_SYSTEM_TRITON=1: a generic triton 3.7.0
  STANDIN_TRITON=triton==3.7.0 run lt triton_kept
  [ "$status" -ne 0 ]
  [[ "$output" == *"the venv's triton changed: TheRock's torch was installed with 'triton==3.5.0+rocm7.14.0', the venv now has 'triton==3.7.0'"* ]]
  [[ "$output" == *"pip install --force-reinstall --no-deps"*"triton==3.5.0+rocm7.14.0"* ]]
}

@test "B1: AITER is built with AITER_USE_SYSTEM_TRITON=1, and steps 03 to 05 check the triton" {
  run dry 03-build-aiter.sh
  [ "$status" -eq 0 ]
  [[ "$output" == *"CK_DIR=/workspace/aiter/3rdparty/composable_kernel AITER_USE_SYSTEM_TRITON=1"*"pip wheel . --no-deps --no-build-isolation"* ]]
  for s in 03-build-aiter.sh 04-build-fa.sh 05-build-vllm.sh 06-verify.sh; do
    grep -q '^triton_kept$' "$TRACK/$s"
  done
}

@test "06 fails on a torch without the GPU's kernels (torch 2.8.0+rocm6.4 on gfx1151)" {
  standin_venv
  STANDIN_ARCH_LIST="gfx900 gfx906 gfx908 gfx90a gfx942 gfx1030 gfx1100 gfx1101 gfx1200 gfx1201" run "$TRACK/06-verify.sh"
  [ "$status" -ne 0 ]
  [[ "$output" == *"FAIL: this torch carries no kernels for gfx1151"* ]]
}

@test "dry run with HALOFORGE_ALLOW_NO_GPU and --root: no devices, said loudly" {
  HALOFORGE_ALLOW_NO_GPU=1 HALOFORGE_DISTROBOX_ROOT=1 TOOLBOX_IMAGE=localhost/x run dry 00-setup-toolbox.sh
  [ "$status" -eq 0 ]
  [[ "$output" == *"[dry-run] distrobox create --root --yes --name haloforge-therock --image localhost/x"* ]]
  [ "$(grep '^\[dry-run\] distrobox create' <<<"$output")" = "[dry-run] distrobox create --root --yes --name haloforge-therock --image localhost/x" ]
  [[ "$output" == *"WITHOUT --device /dev/kfd"* ]]
}

@test "the toolbox step refuses to run as root" {
  [ "$(id -u)" -eq 0 ] || skip "needs root to see the refusal (the integration test covers a normal user)"
  run "$TRACK/00-setup-toolbox.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *"error: running as root: distrobox refuses that"*"HALOFORGE_DISTROBOX_ROOT=1"* ]]
}

@test "dry run of the whole track shows the pinned commands" {
  local out=''
  for s in 00-setup-toolbox.sh 01-install-tools.sh 02-install-rocm.sh 03-build-aiter.sh 04-build-fa.sh 05-build-vllm.sh 06-verify.sh; do
    run dry "$s"
    [ "$status" -eq 0 ] || {
      echo "$s: $output"
      false
    }
    out+=$output$'\n'
  done
  local vllm_ref
  vllm_ref=$(sed -n 's/^VLLM_REF=//p' "$TRACK/../../versions.env")
  [[ "$out" == *"--device /dev/kfd --device /dev/dri"* ]]
  [[ "$out" == *"[dry-run] rocm-sdk init"* ]]
  [[ "$out" == *"'rocm[libraries,devel,device-gfx1151]=="* ]]
  [[ "$out" == *"python use_existing_torch.py"* ]]
  [[ "$out" == *"FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE"*"pip wheel . --no-deps --no-build-isolation"* ]]
  [[ "$out" == *"patch-vllm.sh /workspace/vllm gfx1151"* ]]
  [[ "$out" == *"fetch --depth 1 origin $vllm_ref"* ]]
  [[ "$out" == *"PYTORCH_ROCM_ARCH=gfx1151 GPU_ARCHS=gfx1151"*"HIPFLAGS=--rocm-device-lib-path="*"CC="*"/lib/llvm/bin/clang"* ]]
  [[ "$out" == *"/therock-toolbox/requirements.lock"* ]]
  [[ "$out" == *"install --constraint $LIB/python-pins.txt pip==25.2 setuptools==79.0.1 wheel==0.45.1 packaging==25.0"* ]]
  [[ "$out" == *"<[build-system] requires of /workspace/vllm>"* ]]
  [[ "$out" == *"share/amd_smi"* ]]
  [[ "$out" == *"--extra-index-url https://pypi.org/simple"* ]]
  [[ "$out" == *"verify_vllm.py"* ]]
  [[ "$out" != *"[dry-run] sudo"* || "$(id -u)" -ne 0 ]]
  [ ! -e "$HALOFORGE_STATE_DIR/therock-toolbox/requirements.lock" ]
}

@test "HALOFORGE_SKIP_AITER skips the optional step with its reason" {
  HALOFORGE_SKIP_AITER=1 run "$TRACK/03-build-aiter.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"gfx1151 support is experimental upstream"* ]]
  [[ "$output" == *"HALOFORGE_SKIP_AITER=1: AITER skipped"* ]]
}

@test "a step that needs the box says how to create it when it is missing" {
  command -v distrobox >/dev/null || skip "distrobox not installed"
  TOOLBOX_NAME=hf-no-such-box-$$ run "$TRACK/01-install-tools.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *"box hf-no-such-box-$$ does not exist; create it first"* ]]
}

# box_lib CODE: CODE in bash with common.sh and the track's lib.sh, inside "the box" (this
# machine stands in for it: the venv, git and pip steps are the real ones).
box_lib() {
  HALOFORGE_IN_BOX=1 bash -c ". \"\$LIB/common.sh\"; . \"\$TRACK/lib.sh\"; $1"
}

# offline_pypi: PyPI stands in as a directory of real wheels (Debian's python3-*-whl, and
# Debian's packaging 23.0 repacked as a wheel); pins at those versions; pip never goes out.
offline_pypi() {
  local w=/usr/share/python-wheels
  [[ -f $w/setuptools-66.1.1-py3-none-any.whl && -f $w/wheel-0.38.4-py3-none-any.whl && -d /usr/lib/python3/dist-packages/packaging-23.0.dist-info ]] \
    || skip "needs Debian's python3-setuptools-whl, python3-wheel-whl and python3-packaging"
  mkdir -p "$T/wheels"
  cp "$w"/setuptools-66.1.1-py3-none-any.whl "$w"/wheel-0.38.4-py3-none-any.whl "$T/wheels/"
  python3 - "$T/wheels" <<-'PY'
		import base64, hashlib, os, sys, zipfile
		src = "/usr/lib/python3/dist-packages"
		files = {}
		for root, _, names in os.walk(os.path.join(src, "packaging")):
		    for n in names:
		        if n.endswith(".py") or n == "py.typed":
		            p = os.path.join(root, n)
		            files[os.path.relpath(p, src)] = open(p, "rb").read()
		info = "packaging-23.0.dist-info"
		files[f"{info}/METADATA"] = b"Metadata-Version: 2.1\nName: packaging\nVersion: 23.0\n"
		files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: haloforge-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
		rec = [f"{k},sha256={base64.urlsafe_b64encode(hashlib.sha256(v).digest()).rstrip(b'=').decode()},{len(v)}" for k, v in files.items()]
		files[f"{info}/RECORD"] = ("\n".join(rec + [f"{info}/RECORD,,"]) + "\n").encode()
		with zipfile.ZipFile(os.path.join(sys.argv[1], "packaging-23.0-py3-none-any.whl"), "w") as z:
		    for k, v in files.items():
		        z.writestr(k, v)
	PY
  printf 'pip==%s\nsetuptools==66.1.1\nwheel==0.38.4\npackaging==23.0\n' "$1" >"$T/pins.txt"
  export PIP_NO_INDEX=1 PIP_FIND_LINKS=$T/wheels HF_PYTHON_PINS=$T/pins.txt PIP_DISABLE_PIP_VERSION_CHECK=1
}

# fresh_venv: a new venv, as 01-install-tools.sh makes it with the distro's python
# (ensurepip only), on offline_pypi. Debian's python: its setuptools wheel is patched for it.
fresh_venv() {
  [[ -x /usr/bin/python3 ]] || skip "needs the distro's /usr/bin/python3"
  /usr/bin/python3 -m venv "$T/venv" || skip "python3 -m venv unavailable (apt python3-venv)"
  offline_pypi "$("$T/venv/bin/python" -m pip --version | cut -d' ' -f2)"
}

@test "BREAKS #1: 04's build in a fresh venv: a stand-in whose setup.py imports packaging and wheel builds" {
  fresh_venv
  run "$T/venv/bin/python" -c 'import packaging'
  [ "$status" -ne 0 ]
  # flash-attention's shape (ROCm/flash-attention @16d5154a): no pyproject.toml, setup.py
  # importing packaging.version and wheel.bdist_wheel at top level.
  mkdir -p "$T/standin-fa/standin_fa"
  printf '__version__ = "2.7.4"\n' >"$T/standin-fa/standin_fa/__init__.py"
  cat >"$T/standin-fa/setup.py" <<-'PY'
		from packaging.version import parse
		from setuptools import setup
		from wheel.bdist_wheel import bdist_wheel
		setup(name="standin-fa", version=str(parse("2.7.4")), packages=["standin_fa"], cmdclass={"bdist_wheel": bdist_wheel})
	PY
  export VENV_DIR=$T/venv HALOFORGE_CACHE_DIR=$T/cache HALOFORGE_STEP=flash-attention HALOFORGE_CACHE_KEY=k1
  run box_lib 'activate_venv; build_wheel flash-attention "standin_fa-*.whl" '"$T/standin-fa"' FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE'
  [ "$status" -eq 0 ] || {
    echo "$output"
    false
  }
  [[ "$output" == *"install --constraint $T/pins.txt pip=="*" setuptools==66.1.1 wheel==0.38.4 packaging==23.0"* ]]
  [[ "$output" == *"build requirements of $T/standin-fa: setuptools>=40.8.0 wheel"* ]]
  [[ "$output" == *"ok: built $T/cache/wheels/flash-attention/k1/standin_fa-2.7.4-py3-none-any.whl"* ]]
}

@test "build_wheel stops with the name to pin when a ref's [build-system] requires an unpinned tool" {
  fresh_venv
  mkdir -p "$T/src/x"
  printf '[build-system]\nrequires = ["setuptools>=61", "wheel", "pybind11>=3.0.1"]\nbuild-backend = "setuptools.build_meta"\n' >"$T/src/pyproject.toml"
  export VENV_DIR=$T/venv HALOFORGE_CACHE_DIR=$T/cache HALOFORGE_STEP=aiter HALOFORGE_CACHE_KEY=k1
  run box_lib 'activate_venv; build_wheel aiter "x-*.whl" '"$T/src"
  [ "$status" -ne 0 ]
  [[ "$output" == *"'pybind11>=3.0.1' has no pin in $T/pins.txt: add pybind11==<version>"* ]]
  [[ "$output" != *"pip wheel"* ]]
}

@test "build_wheel builds with pip --no-build-isolation, caches per key, install_wheel installs" {
  fresh_venv
  cp -r "$BATS_TEST_DIRNAME/testdata/hfdemo" "$T/src"
  export VENV_DIR=$T/venv HALOFORGE_CACHE_DIR=$T/cache HALOFORGE_STEP=flash-attention HALOFORGE_CACHE_KEY=k1
  run box_lib 'activate_venv; build_wheel demo "hfdemo-*.whl" '"$T/src"' HFDEMO_VERSION=1.0; install_wheel "$WHEEL"; "$PY" -c "import hfdemo; print(hfdemo.FLAG)"'
  [ "$status" -eq 0 ]
  [[ "$output" == *"+ cd $T/src && env HFDEMO_VERSION=1.0 $T/venv/bin/python -m pip wheel . --no-deps --no-build-isolation -v -w $T/cache/wheels/flash-attention/k1"* ]]
  [[ "$output" == *"ok: built $T/cache/wheels/flash-attention/k1/hfdemo-1.0-py3-none-any.whl"* ]]
  [[ "$output" == *"no $T/venv/haloforge-constraints.txt"* ]]
  [ "${lines[-1]}" = built ]

  # Same key: the cached wheel, no build.
  printf 'hfdemo==1.0\n' >"$T/venv/haloforge-constraints.txt"
  run box_lib 'activate_venv; build_wheel demo "hfdemo-*.whl" '"$T/src"' HFDEMO_VERSION=2.0; install_wheel "$WHEEL"'
  [ "$status" -eq 0 ]
  [[ "$output" == *"reusing the cached demo wheel $T/cache/wheels/flash-attention/k1/hfdemo-1.0-py3-none-any.whl (cache key k1)"* ]]
  [[ "$output" != *"pip wheel"* ]]
  [[ "$output" == *"install --constraint $T/venv/haloforge-constraints.txt --constraint $T/pins.txt"* ]]

  # A new key (pins changed): built again, into its own directory.
  HALOFORGE_CACHE_KEY=k2 run box_lib 'activate_venv; build_wheel demo "hfdemo-*.whl" '"$T/src"' HFDEMO_VERSION=2.0'
  [ "$status" -eq 0 ]
  [ -f "$T/cache/wheels/flash-attention/k2/hfdemo-2.0-py3-none-any.whl" ]
  [ -f "$T/cache/wheels/flash-attention/k1/hfdemo-1.0-py3-none-any.whl" ]
}

@test "git_at checks out the pinned commit, cleanly, and reuses what it fetched" {
  git init -q "$T/up"
  git -C "$T/up" config uploadpack.allowAnySHA1InWant true
  printf 'one\n' >"$T/up/f"
  git -C "$T/up" add f
  git -C "$T/up" -c user.name=t -c user.email=t@t commit -qm one
  local c1
  c1=$(git -C "$T/up" rev-parse HEAD)
  printf 'two\n' >"$T/up/f"
  git -C "$T/up" -c user.name=t -c user.email=t@t commit -qam two

  run box_lib "git_at 'file://$T/up' $c1 '$T/src'"
  [ "$status" -eq 0 ]
  [ "$(git -C "$T/src" rev-parse HEAD)" = "$c1" ]
  [ "$(cat "$T/src/f")" = one ]

  # A patched, dirty tree is reset; the commit is not fetched again.
  printf 'patched\n' >"$T/src/f"
  touch "$T/src/build-artifact"
  run box_lib "git_at 'file://$T/up' $c1 '$T/src'"
  [ "$status" -eq 0 ]
  [[ "$output" == *"$c1 already fetched in $T/src"* ]]
  [[ "$output" != *"fetch --depth 1"* ]]
  [ "$(cat "$T/src/f")" = one ]
  [ ! -e "$T/src/build-artifact" ]

  # A branch floats: fetched every time, so it follows upstream.
  run box_lib "git_at 'file://$T/up' master '$T/src' || git_at 'file://$T/up' main '$T/src'"
  [ "$status" -eq 0 ]
  [ "$(cat "$T/src/f")" = two ]
}

@test "arch list patcher on random lists: adds the target once, keeps every other item in order" {
  local pool=(gfx803 gfx900 gfx906 gfx908 gfx90a gfx942 gfx950 gfx1030 gfx1100 gfx1101 gfx1102 gfx1150 gfx1152 gfx1200 gfx1201 gfx1250)
  local i n j list item
  for ((i = 0; i < 40; i++)); do
    list=''
    n=$((RANDOM % 8))
    for ((j = 0; j < n; j++)); do
      item=${pool[RANDOM % ${#pool[@]}]}
      list+="${list:+;}$item"
    done
    mkdir -p "$T/r$i"
    printf 'x\nset(HIP_SUPPORTED_ARCHS "%s")\ny\n' "$list" >"$T/r$i/CMakeLists.txt"
    run bash -c '. "$LIB/common.sh"; patch_list_add a "$1" HIP_SUPPORTED_ARCHS gfx1151' _ "$T/r$i/CMakeLists.txt"
    [ "$status" -eq 0 ] || {
      echo "list [$list]: $output"
      false
    }
    local got
    got=$(sed -n 's/^set(HIP_SUPPORTED_ARCHS "\(.*\)")$/\1/p' "$T/r$i/CMakeLists.txt")
    [ "$(tr ';' '\n' <<<"$got" | grep -cx gfx1151)" -eq 1 ] || {
      echo "list [$list] -> [$got]"
      false
    }
    [ "$(tr ';' '\n' <<<"$got" | grep -vx gfx1151 | paste -sd';')" = "$list" ] || {
      echo "list [$list] -> [$got]"
      false
    }
    [ "$(sed -n '1p;3p' "$T/r$i/CMakeLists.txt" | paste -sd,)" = "x,y" ]
  done
}

# standin_box_manager IMAGE: a stand-in podman (no container can run here) that knows one
# box made from IMAGE: it answers distrobox's and haloforge's inspect questions and logs the
# rest to $T/manager-calls.
standin_box_manager() {
  mkdir -p "$T/bin"
  cat >"$T/bin/podman" <<FAKE
#!/usr/bin/env bash
# stand-in podman for the bats tests
printf '%s\n' "\$*" >>"$T/manager-calls"
case "\$*" in
*'{{.Config.Image}}'*) echo "$1" ;;
*'{{.State.Running}}'*) echo true ;;
*'.HostConfig.Devices'*) echo '/dev/kfd /dev/dri ' ;;
esac
FAKE
  chmod +x "$T/bin/podman"
  export PATH=$T/bin:$PATH
}

@test "BREAKS N5: re-running the toolbox step on an existing rootful box grants sudo too" {
  standin_box_manager docker.io/library/ubuntu:24.04
  HALOFORGE_DISTROBOX_ROOT=1 run dry 00-setup-toolbox.sh
  [ "$status" -eq 0 ]
  [[ "$output" == *"box haloforge-therock exists with image docker.io/library/ubuntu:24.04: reused"* ]]
  [[ "$output" == *"exec --user root haloforge-therock sh -c"*"NOPASSWD:ALL"*"/etc/sudoers.d/haloforge"* ]]
  [[ "$output" != *"[dry-run] distrobox create"* ]]
  # Rootless, the reused box is left as it is.
  HALOFORGE_DISTROBOX_ROOT=0 run dry 00-setup-toolbox.sh
  [[ "$output" == *"reused"* ]]
  [[ "$output" != *"sudoers.d/haloforge"* ]]
}

# rock_tree DIR: a stand-in vLLM tree whose requirements/build/rock.txt is upstream's, line for
# line (vllm-project/vllm 027281ae), including its -r ../common.txt (a stand-in common.txt).
rock_tree() {
  mkdir -p "$1/requirements/build"
  printf '%s\n' "$MAIN2026" >"$1/CMakeLists.txt"
  printf 'wheel\n' >"$1/requirements/common.txt"
  printf '%s\n' '# Common dependencies' '-r ../common.txt' '' '' \
    '--extra-index-url https://repo.amd.com/rocm/whl-multi-arch/' 'torch==2.12.0+rocm7.14.0' \
    'torchvision==0.27.0+rocm7.14.0' 'torchaudio==2.11.0+rocm7.14.0' 'triton==3.7.1+git0263a6a6.rocm7.14.0' \
    'cmake>=3.26.1,<4' 'packaging>=26.2' 'setuptools>=83.0.0' 'setuptools-scm>=8' 'setuptools-rust>=1.9.0' \
    'wheel' 'jinja2>=3.1.6' 'amdsmi==7.0.2' 'timm>=1.0.17' 'tilelang==0.1.10' >"$1/requirements/build/rock.txt"
}

# standin_torch VERSION: a torch distribution record (dist-info only: a stand-in, no code) in
# the test venv, as pip and importlib.metadata see an installed torch.
standin_torch() {
  local sp
  sp=$("$T/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  mkdir -p "$sp/torch-$1.dist-info"
  printf 'Metadata-Version: 2.1\nName: torch\nVersion: %s\nSummary: haloforge test stand-in\n' "$1" >"$sp/torch-$1.dist-info/METADATA"
  : >"$sp/torch-$1.dist-info/RECORD"
}

@test "BREAKS row 26: a ref whose rock.txt wants torch 2.12 stops, naming it, before any pip" {
  fresh_venv
  "$T/venv/bin/python" -m pip install -q --constraint "$T/pins.txt" packaging==23.0
  standin_torch 2.11.0+rocm7.14.0
  rock_tree "$T/v"
  export VENV_DIR=$T/venv TORCH_VERSION=2.11.0+rocm7.14.0 VLLM_REF=027281ae80cf4b2de7f3a27ee165b916d98c0084
  run box_lib 'activate_venv; check_rock_torch '"$T/v"
  [ "$status" -eq 1 ]
  [[ "$output" == *"error: vLLM at 027281ae80cf4b2de7f3a27ee165b916d98c0084 builds against torch 2.12.0+rocm7.14.0 (requirements/build/rock.txt), this venv has torch 2.11.0+rocm7.14.0 (TORCH_VERSION=2.11.0+rocm7.14.0): use a pin set whose torch is 2.12.0+rocm7.14.0"* ]]
  # The same torch passes; a ref without rock.txt passes.
  sed -i 's/^torch==2.12.0+rocm7.14.0$/torch==2.11.0+rocm7.14.0/' "$T/v/requirements/build/rock.txt"
  run box_lib 'activate_venv; check_rock_torch '"$T/v"
  [ "$status" -eq 0 ]
  [[ "$output" == *"built for torch 2.11.0+rocm7.14.0, the venv's"* ]]
  mkdir -p "$T/norock"
  run box_lib 'activate_venv; check_rock_torch '"$T/norock"
  [ "$status" -eq 0 ]
}

@test "BREAKS row 26: rock.txt's floors against the pins: real pip says ResolutionImpossible, the check names the pin" {
  fresh_venv
  "$T/venv/bin/python" -m pip install -q --constraint "$T/pins.txt" packaging==23.0
  rock_tree "$T/v"
  export VENV_DIR=$T/venv
  # 05's order: patch-vllm.sh drops torch, triton and amdsmi, then pip installs the file.
  run box_lib "bash '$TRACK/patch-vllm.sh' '$T/v' gfx1151"
  rock=$T/v/requirements/build/rock.txt
  [ "$status" -eq 0 ]
  run grep -c 'torch\|triton\|amdsmi' "$rock"
  [ "$output" = 0 ]
  # What 05 ran before: real pip, constrained by the pins, on the file. Offline, pip can
  # serve only setuptools, wheel and packaging, so it gets upstream's lines for those three
  # (and the include): the conflict is the same one.
  grep -E '^(-r |packaging|setuptools>|wheel)' "$rock" >"$T/v/requirements/build/rock-offline.txt"
  run "$T/venv/bin/python" -m pip install --constraint "$T/pins.txt" -r "$T/v/requirements/build/rock-offline.txt"
  [ "$status" -ne 0 ]
  [[ "$output" == *ResolutionImpossible* ]]
  # What it runs now, first: the conflicts, by file, line and pin.
  run box_lib 'activate_venv; check_reqs_pins '"$rock"
  [ "$status" -eq 1 ]
  [[ "$output" == *"rock.txt:"*": 'packaging>=26.2' is not satisfied by the pin packaging==23.0 ($T/pins.txt)"* ]]
  [[ "$output" == *"rock.txt:"*": 'setuptools>=83.0.0' is not satisfied by the pin setuptools==66.1.1 ($T/pins.txt)"* ]]
  [[ "$output" != *ResolutionImpossible* ]]
}

@test "row 26: a requirements file the pins satisfy, -r include included, passes and real pip installs it" {
  fresh_venv
  "$T/venv/bin/python" -m pip install -q --constraint "$T/pins.txt" packaging==23.0
  mkdir -p "$T/v/requirements/build"
  printf 'setuptools>=60\n' >"$T/v/requirements/common.txt"
  printf -- '-r ../common.txt\n--extra-index-url https://repo.amd.com/rocm/whl-multi-arch/\nwheel>=0.38\npackaging>=23.0\n' >"$T/v/requirements/build/rock.txt"
  export VENV_DIR=$T/venv
  run box_lib 'activate_venv; check_reqs_pins '"$T/v/requirements/build/rock.txt"
  [ "$status" -eq 0 ]
  # The include is read relative to the file that names it: a floor there is checked too.
  printf 'setuptools>=70\n' >"$T/v/requirements/common.txt"
  run box_lib 'activate_venv; check_reqs_pins '"$T/v/requirements/build/rock.txt"
  [ "$status" -eq 1 ]
  [[ "$output" == *"common.txt:1: 'setuptools>=70' is not satisfied by the pin setuptools==66.1.1"* ]]
  printf 'setuptools>=60\n' >"$T/v/requirements/common.txt"
  run "$T/venv/bin/python" -m pip install --no-index --find-links "$T/wheels" --constraint "$T/pins.txt" -r "$T/v/requirements/build/rock.txt"
  [ "$status" -eq 0 ]
}

@test "the next vLLM's run-time setuptools>=83.0.0 stops at the pins before the build, named, with python-pins.txt" {
  fresh_venv
  "$T/venv/bin/python" -m pip install -q --no-index --find-links "$T/wheels" packaging==23.0
  mkdir -p "$T/v/requirements"
  # vllm-project/vllm requirements/rocm.txt @027281ae's shape: an include and setuptools>=83.0.0
  printf 'regex\n' >"$T/v/requirements/common.txt"
  printf -- '-r common.txt\nsetuptools>=83.0.0\npeft\n' >"$T/v/requirements/rocm.txt"
  export VENV_DIR=$T/venv HF_PYTHON_PINS=$LIB/python-pins.txt
  run box_lib 'activate_venv; check_reqs_pins '"$T/v/requirements/rocm.txt"' "run-time requirements"'
  [ "$status" -eq 1 ]
  [[ "$output" == *"rocm.txt:2: 'setuptools>=83.0.0' is not satisfied by the pin setuptools==79.0.1"* ]]
  [[ "$output" == *"the run-time requirements of vLLM at "*" ask for versions "*"python-pins.txt does not allow"* ]]
}

@test "U1: python-pins.txt satisfies vLLM's 2026 [build-system] requires (0.26.1.dev0, the nearest to v0.27.1 read)" {
  fresh_venv
  "$T/venv/bin/python" -m pip install -q --constraint "$T/pins.txt" packaging==23.0
  # The [build-system] table as quoted from vLLM 568afb3a (scripts/SOURCES.md, "Python build
  # tools"); cmake and torch are provided by the distribution and the venv.
  mkdir -p "$T/vllm"
  printf '%s\n' '[build-system]' 'requires = [' '    "cmake>=3.26.1",' '    "ninja",' '    "packaging>=24.2",' \
    '    "setuptools>=77.0.3,<81.0.0",' '    "setuptools-scm>=8.0",' '    "setuptools-rust>=1.9.0",' \
    '    "torch == 2.11.0",' '    "wheel",' '    "jinja2",' ']' 'build-backend = "setuptools.build_meta"' >"$T/vllm/pyproject.toml"
  run "$T/venv/bin/python" "$LIB/build_requires.py" "$T/vllm" --pins "$LIB/python-pins.txt" --exclude torch --exclude cmake
  [ "$status" -eq 0 ] || {
    echo "$output"
    false
  }
  [[ "$output" == *'setuptools>=77.0.3,<81.0.0'* ]]
  # A newer ref's floor (setuptools>=83.0.0, vLLM 027281ae) is named, not floated.
  sed -i 's/"setuptools>=77.0.3,<81.0.0"/"setuptools>=83.0.0"/' "$T/vllm/pyproject.toml"
  run "$T/venv/bin/python" "$LIB/build_requires.py" "$T/vllm" --pins "$LIB/python-pins.txt" --exclude torch --exclude cmake
  [ "$status" -eq 3 ]
  [[ "$output" == *"'setuptools>=83.0.0' is not satisfied by the pin setuptools==79.0.1"* ]]
}

@test "U3: 06 notes when vLLM sees only the APU's BIOS carve-out (amdsmi) and says which flags restore its defaults" {
  standin_venv
  STANDIN_VLLM_DEVICE_MEMORY=536870912 run "$TRACK/06-verify.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"note: vLLM sees 0.5 GiB of GPU memory (amdsmi counts only the BIOS VRAM carve-out on this APU), HIP sees 96.0 GiB"*"--max-num-seqs 512 --max-num-batched-tokens 4096"* ]]
  # Still verified: the note changes no outcome.
  grep -q $'^verified\tvLLM .* detects the ROCm platform' "$T/results.tsv"
  run "$TRACK/06-verify.sh"
  [[ "$output" != *"note: vLLM sees"* ]]
}

@test "row 12: rocm-sdk init runs after the torch install, the last device wheel (TheRock #5347)" {
  run dry 02-install-rocm.sh
  [ "$status" -eq 0 ]
  local torch_line init_line
  torch_line=$(grep -n "'torch\[device-gfx1151\]==" <<<"$output" | tail -n 1 | cut -d: -f1)
  init_line=$(grep -n '\[dry-run\] rocm-sdk init' <<<"$output" | head -n 1 | cut -d: -f1)
  [ -n "$torch_line" ]
  [ -n "$init_line" ]
  [ "$init_line" -gt "$torch_line" ]
}

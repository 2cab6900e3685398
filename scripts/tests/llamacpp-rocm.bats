#!/usr/bin/env bats
# Tests of the llamacpp-rocm ladder (scripts/llamacpp-rocm). There is no GPU and no registry
# here, so the container engine is a stand-in (fake_engine below) that plays a scripted
# outcome per rung: a hang after llama.cpp's real hang-prone line, a crash, llama-bench's
# real output for a missing -dev device, a real CPU-only run (Debian sid's Vulkan build with
# no device: testdata/llama-bench-cpu-only*, "Vulkan" read as "ROCm"), or a GPU run (the real
# lavapipe JSONL rows with ROCm0 and the 8060S standing in for the GPU). Everything else
# (the ladder data, the stall watch with real timing, the records) is the real code.
# shellcheck disable=SC2016,SC2030,SC2031

load answers_standin

setup() {
  S=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
  T=$BATS_TEST_TMPDIR
  export NO_COLOR=1 HALOFORGE_STATE_DIR=$T/state HALOFORGE_RUN_DIR=$T/state/runs/r1
  export HALOFORGE_CACHE_DIR=$T/state/cache/llamacpp-rocm HALOFORGE_ALLOW_NO_GPU=1
  export LLAMA_STALL_TIMEOUT=1 LLAMA_MODEL=$T/models/tiny.gguf
  export HALOFORGE_RESULT_FILE=$T/results.tsv HALOFORGE_TRACK=llamacpp-rocm
  unset HALOFORGE_DRY_RUN
  mkdir -p "$T/models" "$T/bin" "$T/outcome"
  : >"$LLAMA_MODEL"
  fake_engine
  export HALOFORGE_CONTAINER_ENGINE=$T/bin/podman
}

# fake_engine: $T/bin/podman plays $T/outcome/<rung id> (hang, crash, bench; default hang)
# for `run --name haloforge-ladder-<id> …` and logs every call to $T/calls.
fake_engine() {
  cat >"$T/bin/podman" <<FAKE
#!/usr/bin/env bash
# stand-in podman for the bats tests
D=$BATS_TEST_DIRNAME/testdata
FAKE
  cat >>"$T/bin/podman" <<'FAKE'
printf '%s\n' "$*" >>"$(dirname "$0")/../calls"
all=" $* "
T=$(dirname "$0")/..
[[ $1 == stop ]] && exit 0
[[ $1 == run ]] || exit 0
# The rung's numerical checks (rung_answers): which tools its image ships ($T/outcome/tools),
# test-backend-ops' real output (Vulkan0 renamed ROCm0) or a failure ($T/outcome/ops), and
# llama-server as the stand-in of lib tests (stand_in_server) on the host's network.
case $all in
*"llama-server --help "*) echo '  --mmap, --no-mmap    whether to memory-map the model'; exit 0 ;;
*" --help "*) echo '  -lm, --load-mode <auto|none|mmap|mlock|mmap+mlock|dio> (default: auto)'; exit 0 ;;
*" sh -c command -v "*) tool=${all##* command -v }; tool=${tool%% *}; grep -qx "${tool##*/}" "$T/outcome/tools" 2>/dev/null; exit ;;
*"test-backend-ops -o "*)
  if [[ $(cat "$T/outcome/ops" 2>/dev/null) == fail ]]; then echo "MUL_MAT(type_a=f16): FAIL"; echo "Backend ROCm0: FAIL"; exit 1; fi
  sed -e 's/Vulkan0/ROCm0/g' -e 's/llvmpipe (LLVM 22.1.8, 256 bits)/AMD Radeon Graphics/' "$D/test-backend-ops-vulkan0.txt"; exit 0 ;;
*" llama-server "* | *"/llama-server "*) shift 0; args=${all#* llama-server }; [[ $all == *"/llama-server "* ]] && args=${all#*/llama-server }
  # shellcheck disable=SC2086 # the words of the stand-in's command line
  exec "$T/bin/llama-server" $args ;;
esac
name=''
while (($#)); do [[ $1 == --name ]] && name=$2; shift; done
outcome=$(cat "$(dirname "$0")/../outcome/${name#haloforge-ladder-}" 2>/dev/null || echo hang)
case $outcome in
crash)
  echo "ggml_cuda_init: found 1 ROCm devices:"
  echo "Illegal instruction (core dumped)"
  exit 132 ;;
cpubench)
  # real: a build whose GPU backend found no device still names it in backends
  if [[ $all == *" -o jsonl "* ]]; then
    sed 's/Vulkan/ROCm/g' "$D/llama-bench-cpu-only-v.log"
  else
    sed 's/Vulkan/ROCm/g' "$D/llama-bench-cpu-only.md"
  fi
  exit 0 ;;
nodev)
  sed 's/Vulkan/ROCm/g' "$D/llama-bench-dev-missing.txt"
  exit 1 ;;
bench)
  echo "ggml_cuda_init: found 1 ROCm devices:"
  echo "load_all_data: using async uploads for device ROCm0"
  echo "load_tensors: offloaded 17/17 layers to GPU"
  echo "graph_reserve: reserving a graph for ubatch with n_tokens = 64"
  grep '^{' "$D/llama-bench-lavapipe-v.log" | sed -e 's/Vulkan/ROCm/g' -e 's/llvmpipe (LLVM 22.1.8, 256 bits)/AMD Radeon Graphics/'
  exit 0 ;;
*)
  echo "load_all_data: using async uploads for device ROCm0"
  echo "graph_reserve: reserving a graph for ubatch with n_tokens = 64"
  exec sleep 30 ;;
esac
FAKE
  chmod +x "$T/bin/podman"
}

lib() { bash -c ". \"$S/lib/common.sh\"; . \"$S/lib/container.sh\"; . \"$S/llamacpp-rocm/ladder.sh\"; $1"; }

@test "the ladder is data: the image as shipped first, the prebuilt build, then the 2025 workarounds" {
  run lib "ladder_rungs '$S/llamacpp-rocm/ladder.tsv' | cut -f1"
  [ "$status" -eq 0 ]
  # no-rocwmma is gone: its image has no llama-bench and is built with rocWMMA; N8:
  # gfx1100-override is gone: kyuz0's images carry gfx1151 kernels only.
  [ "$output" = "$(printf '%s\n' as-shipped prebuilt sdma-off flash-attn-off cwsr-off therock-nightly)" ]
  run lib "ladder_rungs '$S/llamacpp-rocm/ladder.tsv' | cut -f2 | sort -u"
  for pin in $output; do grep -q "^$pin=" "$S/../versions.env"; done
  # the first rung has no workaround at all: no environment, no flags, no host change
  run lib "ladder_rungs '$S/llamacpp-rocm/ladder.tsv' | awk -F '\t' 'NR == 1 { print \$3 \$4 \$5 \$6 }'"
  [ "$output" = "---image" ]
  run lib "ladder_rungs '$S/llamacpp-rocm/ladder.tsv' | awk -F '\t' '\$1 == \"prebuilt\" { print \$6 }'"
  [ "$output" = prebuilt ]
  run lib "ladder_rungs '$S/llamacpp-rocm/ladder.tsv' | awk -F '\t' '\$1 == \"sdma-off\" { print \$3 }'"
  [[ "$output" == *HSA_ENABLE_SDMA=0* ]]
}

@test "a malformed ladder line is refused with its line number" {
  printf 'ok\tLLAMACPP_ROCM_IMAGE\t-\t-\t-\timage\twhy\nbroken\tonly-two\nodd\tLLAMACPP_ROCM_IMAGE\t-\t-\t-\tsomewhere\twhy\n' >"$T/l.tsv"
  run lib "ladder_rungs '$T/l.tsv'"
  [ "$status" -ne 0 ]
  [[ "$output" == *"l.tsv:2: want 7 tab-separated fields, got 2"* ]]
  [[ "$output" == *'l.tsv:3: runs is "somewhere", want image or prebuilt'* ]]
}

@test "stall_watch passes a healthy run through, marker lines included" {
  run lib "printf 'load_all_data: using async uploads for device ROCm0\nall good\n' | stall_watch 1 '$T/log'"
  [ "$status" -eq 0 ]
  [ "$(cat "$T/log")" = "$(printf 'load_all_data: using async uploads for device ROCm0\nall good')" ]
}

@test "stall_watch calls silence after graph_reserve a hang at that line, within the timeout" {
  run lib "{ echo 'llama_context: constructing'; echo 'graph_reserve: reserving a graph for ubatch with n_tokens = 512'; sleep 4; } | { s=\$SECONDS rc=0; stall_watch 1 '$T/log' || rc=\$?; echo \"rc=\$rc \$STALL_REASON took=\$((SECONDS - s))\"; }"
  [[ "$output" == *"rc=3 hung at graph_reserve: reserving a graph for ubatch (no output for 1s) took="[12]* ]]
}

@test "stall_watch allows three times the timeout before any marker" {
  run lib "{ echo loading; sleep 2; echo loaded; } | { rc=0; stall_watch 1 '$T/log' || rc=\$?; echo \"rc=\$rc\"; }"
  [[ "$output" == *"loaded"*"rc=0"* ]]
}

@test "the cwsr rung needs a host change: it is skipped with the exact command, never applied" {
  mkdir -p "$T/sys/sys/module/amdgpu/parameters"
  echo 1 >"$T/sys/sys/module/amdgpu/parameters/cwsr_enable"
  run lib "HALOFORGE_SYSFS_ROOT='$T/sys' host_check_ok /sys/module/amdgpu/parameters/cwsr_enable=0 || echo \"differs, host has \$(HALOFORGE_SYSFS_ROOT='$T/sys' host_check_ok /sys/module/amdgpu/parameters/cwsr_enable=0 || true)\""
  [ "$output" = "1
differs, host has 1" ]
  echo 0 >"$T/sys/sys/module/amdgpu/parameters/cwsr_enable"
  run lib "HALOFORGE_SYSFS_ROOT='$T/sys' host_check_ok /sys/module/amdgpu/parameters/cwsr_enable=0"
  [ "$status" -eq 0 ]
  run lib "host_change_hint /sys/module/amdgpu/parameters/cwsr_enable=0"
  [[ "$output" == *"amdgpu.cwsr_enable=0"*reboot* ]]
}

@test "the ladder records a crash, a hang and a skip, stops at the first rung that generates on the GPU" {
  echo crash >"$T/outcome/as-shipped"
  echo crash >"$T/outcome/sdma-off"
  echo bench >"$T/outcome/cwsr-off"
  printf '%s\n' test-backend-ops llama-server >"$T/outcome/tools"
  stand_in_answers
  export HALOFORGE_SYSFS_ROOT=$T/sys
  mkdir -p "$T/sys/sys/module/amdgpu/parameters"
  echo 0 >"$T/sys/sys/module/amdgpu/parameters/cwsr_enable"
  run bash "$S/llamacpp-rocm/01-run-ladder.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"as-shipped: failed: exit 132: Illegal instruction (core dumped)"* ]]
  [[ "$output" == *"the prebuilt build is not unpacked at $HALOFORGE_STATE_DIR/llamacpp-rocm/prebuilt/726250806fb8ee00: run the pull step"* ]]
  [[ "$output" == *"flash-attn-off: hung: hung at graph_reserve: reserving a graph for ubatch"* ]]
  [[ "$output" == *"cwsr-off works: llama.cpp Debian (build 11669) on ROCm device ROCm0 (AMD Radeon Graphics), offloaded 17/17 layers: pp64: 768.8 t/s, tg16: 337.1 t/s"* ]]
  [[ "$output" == *"answers: verified: test-backend-ops: 10/10 tests passed on ROCm0 (AMD Radeon Graphics) (matches the CPU backend); answers: right: 6 prompts agree with the reference recorded on CPU by llama.cpp b11669"* ]]
  # the answers: the reference from the image's CPU backend, then ROCm0, each in the rung's
  # container on the host's network, with the rung's environment
  grep -q -- "run --rm --name llama-reference --network host .*-e HSA_ENABLE_SDMA=0 .*docker.io/kyuz0/amd-strix-halo-toolboxes:rocm-7.14 llama-server -m /models/tiny.gguf -ngl 0 --device none --host 127.0.0.1" "$T/calls"
  grep -q -- "run --rm --name llama-under-test --network host .*llama-server -m /models/tiny.gguf -ngl 99 -fa on --device ROCm0 --no-mmap --host 127.0.0.1" "$T/calls"
  grep -q -- "--reference-for $LLAMA_MODEL --track llamacpp-rocm" "$T/hf-calls"
  json=$HALOFORGE_STATE_DIR/llamacpp-rocm/ladder.json
  [ "$(grep -c '"id":' "$json")" -eq 5 ]
  grep -q '"id": "prebuilt", "status": "skipped"' "$json"
  grep -q '"id": "flash-attn-off", "status": "hung"' "$json"
  grep -q '"id": "cwsr-off", "status": "success", .*"answers": "verified: test-backend-ops: ' "$json"
  run grep -q therock-nightly "$json"
  [ "$status" -ne 0 ]
  # The first rung ran as shipped (no -e, no extra flags); the workaround rungs with their
  # environment and flags, on ROCm0 with JSONL rows; nothing after the winner.
  grep -q -- '--name haloforge-ladder-as-shipped --device /dev/kfd --device /dev/dri --group-add keep-groups --security-opt seccomp=unconfined -v [^ ]*:/models:ro,z docker.io/kyuz0/amd-strix-halo-toolboxes:rocm-7.14 llama-bench -m /models/tiny.gguf -ngl 99 -p 64 -n 16 -r 1 -v -o jsonl -dev ROCm0 -lm none$' "$T/calls"
  grep -q -- '--name haloforge-ladder-flash-attn-off.*-e HSA_ENABLE_SDMA=0.*llama-bench -m /models/tiny.gguf.* -v -o jsonl -dev ROCm0 -lm none -fa 0' "$T/calls"
  run grep -q 'haloforge-ladder-therock-nightly' "$T/calls"
  [ "$status" -ne 0 ]
  run bash "$S/llamacpp-rocm/02-verify.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"works on this box: cwsr-off (docker.io/kyuz0/amd-strix-halo-toolboxes:rocm-7.14)"* ]]
  [[ "$output" == *"verified: llama.cpp generated tokens on the GPU with rung cwsr-off (docker.io/kyuz0/amd-strix-halo-toolboxes:rocm-7.14): llama.cpp Debian (build 11669) on ROCm device ROCm0"*"answers: verified)"* ]]
  [ "$(cut -f1 "$HALOFORGE_RESULT_FILE")" = verified ]
}

@test "the image as shipped is the first rung: when it works, no workaround runs" {
  echo bench >"$T/outcome/as-shipped"
  echo test-backend-ops >"$T/outcome/tools"
  run bash "$S/llamacpp-rocm/01-run-ladder.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"as-shipped works: "* ]]
  [ "$(grep -c 'run --rm --name' "$T/calls")" -eq 1 ]
  grep -q '"id": "as-shipped", "status": "success"' "$HALOFORGE_STATE_DIR/llamacpp-rocm/ladder.json"
}

@test "the prebuilt rung runs the checked build mounted read-only, its libraries first" {
  echo crash >"$T/outcome/as-shipped"
  echo bench >"$T/outcome/prebuilt"
  echo test-backend-ops >"$T/outcome/tools"
  pre=$HALOFORGE_STATE_DIR/llamacpp-rocm/prebuilt/726250806fb8ee00
  mkdir -p "$pre"
  printf '#!/bin/sh\n' >"$pre/llama-bench"
  chmod +x "$pre/llama-bench"
  run bash "$S/llamacpp-rocm/01-run-ladder.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"prebuilt works: "* ]]
  grep -q -- "--name haloforge-ladder-prebuilt .* -v $pre:/opt/llamacpp-prebuilt:ro,z -e LD_LIBRARY_PATH=/opt/llamacpp-prebuilt -v [^ ]*:/models:ro,z docker.io/kyuz0/amd-strix-halo-toolboxes:rocm-7.14 /opt/llamacpp-prebuilt/llama-bench -m /models/tiny.gguf" "$T/calls"
  grep -q '"id": "prebuilt", "status": "success", "seconds": [0-9]*, "image": "docker.io/kyuz0/amd-strix-halo-toolboxes:rocm-7.14 + llama-b1342-ubuntu-rocm-gfx1151-x64.zip"' "$HALOFORGE_STATE_DIR/llamacpp-rocm/ladder.json"
  # its own test-backend-ops, with its libraries
  grep -q -- "-v $pre:/opt/llamacpp-prebuilt:ro,z -e LD_LIBRARY_PATH=/opt/llamacpp-prebuilt .* /opt/llamacpp-prebuilt/test-backend-ops -o MUL_MAT -b ROCm0" "$T/calls"
}

# standin_curl: $T/bin/curl plays the release server (no internet here): it copies
# $T/served/<file name of the URL> to the -o file, or fails like curl -f on a 404.
standin_curl() {
  mkdir -p "$T/served"
  cat >"$T/bin/curl" <<'CURL'
#!/usr/bin/env bash
# stand-in curl for the bats tests
printf '%s\n' "$*" >>"$(dirname "$0")/../curl-calls"
out='' url=''
while (($#)); do
  case $1 in
    -o) out=$2; shift ;;
    https://*) url=$1 ;;
  esac
  shift
done
src=$(dirname "$0")/../served/${url##*/}
[[ -f "$src" ]] || { echo "curl: (22) The requested URL returned error: 404" >&2; exit 22; }
cp "$src" "$out"
CURL
  chmod +x "$T/bin/curl"
}

# zip_build DIR ZIP: a zip of DIR (a llama.cpp build with a top directory), made by python3.
zip_build() {
  python3 -c 'import os, sys, zipfile
d, z = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(z, "w") as f:
    for root, _, files in os.walk(d):
        for n in files:
            p = os.path.join(root, n)
            f.write(p, os.path.relpath(p, os.path.dirname(d)))' "$1" "$2"
}

@test "the pull step fetches the prebuilt build, refuses a checksum that differs, unpacks one that matches" {
  standin_curl
  export PATH=$T/bin:$PATH LLAMACPP_ROCM_PREBUILT_URL=https://github.com/lemonade-sdk/llamacpp-rocm/releases/download/b1342/llama-b1342-ubuntu-rocm-gfx1151-x64.zip
  mkdir -p "$T/build/llama-b1342-ubuntu-rocm-gfx1151-x64"
  printf '#!/bin/sh\necho bench\n' >"$T/build/llama-b1342-ubuntu-rocm-gfx1151-x64/llama-bench"
  echo lib >"$T/build/llama-b1342-ubuntu-rocm-gfx1151-x64/libggml-hip.so"
  zip_build "$T/build/llama-b1342-ubuntu-rocm-gfx1151-x64" "$T/served/llama-b1342-ubuntu-rocm-gfx1151-x64.zip"
  sum=$(sha256sum "$T/served/llama-b1342-ubuntu-rocm-gfx1151-x64.zip" | cut -d' ' -f1)
  # a pinned sum that differs: refused, nothing unpacked
  zeros=$(printf '0%.0s' {1..64})
  export LLAMACPP_ROCM_PREBUILT_SHA256=sha256:$zeros
  run lib "prebuilt_fetch"
  [ "$status" -eq 3 ]
  [[ "$output" == *"has sha256 $sum, not the pinned 0000000000000000000000000000000000000000000000000000000000000000: refused, nothing unpacked"* ]]
  [ -z "$(find "$HALOFORGE_STATE_DIR/llamacpp-rocm/prebuilt" -mindepth 1 2>/dev/null)" ]
  # the right sum: unpacked one level down, llama-bench at the top, the sum recorded
  export LLAMACPP_ROCM_PREBUILT_SHA256=sha256:$sum
  run lib "prebuilt_fetch"
  [ "$status" -eq 0 ]
  pre=$HALOFORGE_STATE_DIR/llamacpp-rocm/prebuilt/${sum:0:16}
  [ -x "$pre/llama-bench" ]
  [ -f "$pre/libggml-hip.so" ]
  [ "$(cat "$pre/.sha256")" = "$sum" ]
  [ ! -e "$pre.zip.part" ] && [ ! -e "$pre.tmp" ]
  grep -q -- "--proto =https --tlsv1.2 .*-o $pre.zip.part https://github.com/lemonade-sdk/" "$T/curl-calls"
  # again: reused, not downloaded
  run lib "prebuilt_fetch"
  [ "$status" -eq 0 ]
  [[ "$output" == *"already unpacked and checked"* ]]
  [ "$(wc -l <"$T/curl-calls")" -eq 2 ]
  # a zip without llama-bench is refused after its checksum matched
  rm -rf "$T/build/llama-b1342-ubuntu-rocm-gfx1151-x64/llama-bench" "$pre"
  zip_build "$T/build/llama-b1342-ubuntu-rocm-gfx1151-x64" "$T/served/llama-b1342-ubuntu-rocm-gfx1151-x64.zip"
  sum=$(sha256sum "$T/served/llama-b1342-ubuntu-rocm-gfx1151-x64.zip" | cut -d' ' -f1)
  export LLAMACPP_ROCM_PREBUILT_SHA256=sha256:$sum
  run lib "prebuilt_fetch"
  [ "$status" -eq 3 ]
  [[ "$output" == *"has no llama-bench at its top: refused"* ]]
}

@test "the pull step's dry run shows the download, the checksum and the unpack" {
  export HALOFORGE_DRY_RUN=1 LLAMACPP_ROCM_PREBUILT_URL=https://github.com/lemonade-sdk/llamacpp-rocm/releases/download/b1342/llama-b1342-ubuntu-rocm-gfx1151-x64.zip
  run bash "$S/llamacpp-rocm/00-pull-images.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"[dry-run] curl -fL --proto =https --tlsv1.2 --retry 3 --connect-timeout 20 -o $HALOFORGE_STATE_DIR/llamacpp-rocm/prebuilt/726250806fb8ee00.zip.part https://github.com/lemonade-sdk/llamacpp-rocm/releases/download/b1342/llama-b1342-ubuntu-rocm-gfx1151-x64.zip"* ]]
  [[ "$output" == *"must be 726250806fb8ee008c1e054c7ce17f2c0004771461af67f2c1783d3f43c46b59, else the download is refused"* ]]
  [[ "$output" == *"[dry-run] python3 -m zipfile -e "* ]]
}

@test "BREAKS N2: a rung that generated on the CPU (real: its backend column still says ROCm) is no success" {
  echo crash >"$T/outcome/as-shipped"
  echo cpubench >"$T/outcome/sdma-off"
  echo nodev >"$T/outcome/flash-attn-off"
  echo bench >"$T/outcome/therock-nightly"
  echo test-backend-ops >"$T/outcome/tools"
  run bash "$S/llamacpp-rocm/01-run-ladder.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"sdma-off: failed: not on the GPU: llama-bench's pp64 row ran on devices 'auto', not ROCm0"* ]]
  [[ "$output" == *"flash-attn-off: failed: exit 1: error: invalid device: ROCm0"* ]]
  [[ "$output" == *"therock-nightly works: llama.cpp Debian (build 11669) on ROCm device ROCm0"* ]]
}

@test "without a model the ladder refuses before touching anything" {
  unset LLAMA_MODEL
  run bash "$S/llamacpp-rocm/01-run-ladder.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *"--set LLAMA_MODEL=/path/to/model.gguf"* ]]
  [ ! -e "$T/calls" ]
}

@test "json_str escapes quotes, backslashes and control characters" {
  run lib "json_str \$'a\"b\\\\c\td\ne'"
  [ "$output" = '"a\"b\\c\td\ne"' ]
}

@test "W2: a rung that generates fast but computes wrong is no success: the ladder goes on" {
  echo bench >"$T/outcome/as-shipped"
  echo bench >"$T/outcome/sdma-off"
  printf '%s\n' test-backend-ops llama-server >"$T/outcome/tools"
  stand_in_answers
  export FX_ANSWERS=wrong
  run bash "$S/llamacpp-rocm/01-run-ladder.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *'as-shipped: wrong-output: '*'; but WRONG OUTPUT: prompt 1 (capital, "The capital of France is"), position 0: expected " Paris"'* ]]
  json=$HALOFORGE_STATE_DIR/llamacpp-rocm/ladder.json
  grep -q '"id": "as-shipped", "status": "wrong-output", .*"answers": "wrong: WRONG OUTPUT: prompt 1 ' "$json"
  grep -q '"id": "sdma-off", "status": "wrong-output"' "$json"
  # the CPU reference was recorded once, for both rungs
  [ "$(grep -c -- --record-for "$T/hf-calls")" -eq 1 ]
  [[ "$output" == *"no rung loaded the model and generated right tokens on this box"* ]]
}

@test "W2: test-backend-ops failing on ROCm0 is wrong output, before any model is served" {
  echo bench >"$T/outcome/as-shipped"
  printf '%s\n' test-backend-ops llama-server >"$T/outcome/tools"
  echo fail >"$T/outcome/ops"
  stand_in_answers
  run bash "$S/llamacpp-rocm/01-run-ladder.sh"
  [[ "$output" == *"as-shipped: wrong-output: "*"; but test-backend-ops -o MUL_MAT -b ROCm0 failed (exit 1): ROCm0's matrix multiplications differ from the CPU's"* ]]
  run grep -c llama-under-test "$T/calls"
  [ "$output" -eq 0 ]
}

@test "W2: a rung with no numerical check to run is unverified, not a success" {
  echo bench >"$T/outcome/as-shipped"
  : >"$T/outcome/tools"
  run bash "$S/llamacpp-rocm/01-run-ladder.sh"
  [[ "$output" == *"as-shipped: unverified: "*"; but no numerical check could run (the rung ships neither test-backend-ops nor llama-server): its speed alone does not say it computes right"* ]]
  grep -q '"id": "as-shipped", "status": "unverified"' "$HALOFORGE_STATE_DIR/llamacpp-rocm/ladder.json"
}

@test "the ladder's dry run shows the bench without mmap and both numerical checks" {
  run env HALOFORGE_DRY_RUN=1 bash "$S/llamacpp-rocm/01-run-ladder.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"-o jsonl -dev ROCm0 -lm none"* ]]
  [[ "$output" == *"test-backend-ops -o MUL_MAT -b ROCm0"* ]]
  [[ "$output" == *"--name '{name}' --network host"*"llama-server -m /models/tiny.gguf -ngl 0 --device none"* || "$output" == *"--name {name} --network host"*"llama-server -m /models/tiny.gguf -ngl 0 --device none"* ]]
}

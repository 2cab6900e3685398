#!/usr/bin/env bats
# Tests of scripts/lib (common.sh, box.sh, patch.sh). The helpers run in a child bash
# (hf), because common.sh defines its own `run` that would shadow bats' run here.
# Single-quoted $ below is shell code for the child on purpose.
# shellcheck disable=SC2016,SC2030,SC2031

setup() {
  LIB=$(cd "$BATS_TEST_DIRNAME/../lib" && pwd)
  export LIB
  T=$BATS_TEST_TMPDIR
  unset HALOFORGE_DRY_RUN MAX_JOBS HALOFORGE_MEM_GIB HALOFORGE_DISTROBOX_ROOT
  export NO_COLOR=1
}

# hf CODE: run CODE in bash after sourcing common.sh.
hf() {
  bash -c ". \"\$LIB/common.sh\"; $1"
}

@test "quote_cmd quotes only what needs it and round-trips through the shell" {
  run hf "quote_cmd echo 'a b' \"it's\" '' 'x=\$y' plain/path:1,2"
  [ "$status" -eq 0 ]
  [ "$output" = "echo 'a b' 'it'\\''s' '' 'x=\$y' plain/path:1,2" ]
  run bash -c "eval \"\$(bash -c '. \"\$LIB/common.sh\"; quote_cmd printf \"<%s>\" \"a b\" \"it'\\''s\" \"\"')\""
  [ "$output" = "<a b><it's><>" ]
}

@test "run prints the command then runs it" {
  run hf "run touch '$T/made it'"
  [ "$status" -eq 0 ]
  [ "$output" = "+ touch '$T/made it'" ]
  [ -f "$T/made it" ]
}

@test "run in a dry run prints the real values and changes nothing" {
  export HALOFORGE_DRY_RUN=1
  run hf "v=1.2; run touch '$T/x' \"--pin=\$v\""
  [ "$status" -eq 0 ]
  [ "$output" = "[dry-run] touch $T/x --pin=1.2" ]
  [ ! -e "$T/x" ]
}

@test "run passes the exit code through and the ERR trap names the command and line" {
  printf '%s\n' '. "$LIB/common.sh"' 'f() { run_in / ls /hf-nonexistent; }' 'true' 'f' >"$T/step.sh"
  run bash "$T/step.sh"
  [ "$status" -eq 2 ]
  [[ "$output" == *"+ cd / && ls /hf-nonexistent"* ]]
  [ "${lines[-1]}" = "error: command failed (exit 2) at step.sh:2: cd / && ls /hf-nonexistent" ]
  [ "$(grep -c 'command failed' <<<"$output")" -eq 1 ]
  printf '%s\n' '. "$LIB/common.sh"' 'false' 'echo unreachable' >"$T/top.sh"
  run bash "$T/top.sh"
  [ "$status" -eq 1 ]
  [ "$output" = "error: command failed (exit 1) at top.sh:2: false" ]
}

@test "run_in runs in the directory; a dry run needs no directory" {
  mkdir "$T/d"
  run hf "run_in '$T/d' pwd"
  [ "${lines[1]}" = "$T/d" ]
  HALOFORGE_DRY_RUN=1 run hf "run_in /does/not/exist make -j2"
  [ "$status" -eq 0 ]
  [ "$output" = "[dry-run] cd /does/not/exist && make -j2" ]
}

@test "write_file writes atomically; a dry run shows the content instead" {
  run hf "printf 'a\nb\n' | write_file '$T/sub/f.txt'"
  [ "$status" -eq 0 ]
  [ "$(cat "$T/sub/f.txt")" = $'a\nb' ]
  [ "$(ls -A "$T/sub")" = f.txt ]
  [ "$(stat -c %a "$T/sub/f.txt")" = "$(printf '%o' $((0666 & ~$(umask))))" ]
  chmod 0751 "$T/sub/f.txt"
  run hf "printf 'new\n' | write_file '$T/sub/f.txt'"
  [ "$(cat "$T/sub/f.txt")" = new ]
  [ "$(stat -c %a "$T/sub/f.txt")" = 751 ]
  HALOFORGE_DRY_RUN=1 run hf "printf 'c\n' | write_file '$T/g.txt'"
  [ ! -e "$T/g.txt" ]
  [[ "$output" == *"[dry-run] write $T/g.txt:"*"    c"* ]]
}

@test "require names every missing command and how to install it" {
  run hf "require bash"
  [ "$status" -eq 0 ]
  run hf "require bash hf-no-such-tool hf-nor-this"
  [ "$status" -eq 1 ]
  [[ "$output" == *"missing command(s): hf-no-such-tool hf-nor-this"* ]]
  [[ "$output" == *"install -y hf-no-such-tool hf-nor-this"* ]]
}

@test "require_env lists the unset variables" {
  run hf "A=1; B=; require_env A B C"
  [ "$status" -eq 1 ]
  [[ "$output" == *"not set: B C"* ]]
}

@test "retry succeeds once the command does, with backoff messages" {
  echo 0 >"$T/n"
  run hf "retry -n 4 -d 0 -- bash -c 'n=\$((\$(cat $T/n) + 1)); echo \$n > $T/n; [ \$n -ge 3 ]'"
  [ "$status" -eq 0 ]
  [ "$(cat "$T/n")" = 3 ]
  [[ "$output" == *"attempt 1/4 failed (exit 1)"* ]]
  [[ "$output" == *"attempt 2/4 failed"* ]]
  [[ "$output" != *"attempt 3/4"* ]]
}

@test "retry gives up after its attempts and keeps the exit code" {
  run hf "retry -n 2 -d 0 -- bash -c 'exit 7' || echo rc=\$?"
  [[ "$output" == *"gave up after 2 attempts (exit 7)"* ]]
  [[ "$output" == *"rc=7"* ]]
}

@test "retry runs nothing in a dry run" {
  HALOFORGE_DRY_RUN=1 run hf "retry -n 3 -- touch '$T/r'"
  [ "$status" -eq 0 ]
  [ "$output" = "[dry-run] touch $T/r" ]
  [ ! -e "$T/r" ]
}

@test "load_env_file: the environment wins and later refs see it; CRLF lines load" {
  printf 'A=1\r\n# c\r\n\r\nB=x${A}y\r\nC=${B}-z\r\n' >"$T/v.env"
  run hf "load_env_file '$T/v.env'; echo \"\$A|\$B|\$C\""
  [ "$output" = "1|x1y|x1y-z" ]
  run env A=9 bash -c ". \"\$LIB/common.sh\"; load_env_file '$T/v.env'; echo \"\$A|\$B|\$C\""
  [ "$output" = "9|x9y|x9y-z" ]
  run env B=set bash -c ". \"\$LIB/common.sh\"; load_env_file '$T/v.env'; echo \"\$A|\$B|\$C\""
  [ "$output" = "1|set|set-z" ]
}

@test "load_env_file rejects a line that is not NAME=value" {
  printf 'A=1\nexport B=2\n' >"$T/bad.env"
  run hf "load_env_file '$T/bad.env'"
  [ "$status" -eq 1 ]
  [[ "$output" == *"$T/bad.env:2: not a NAME=value line: export B=2"* ]]
}

@test "load_env_file never runs what a value holds, and names the file and line" {
  local bad
  for bad in 'A=$(touch '"$T"'/pwned)' 'A=`touch '"$T"'/pwned`' 'A="$(touch '"$T"'/pwned)"' \
    'A=x;touch '"$T"'/pwned' 'A=x|touch '"$T"'/pwned' 'A=$HOME' 'A=${HOME:-x}' 'A=$((1+1))' \
    "A=\$'x'" "A=x\\" 'A=*' 'A=x y' 'A=x > '"$T"'/pwned' 'A="x\"'; do
    printf '# ok\nB=1\n%s\n' "$bad" >"$T/bad.env"
    run hf "load_env_file '$T/bad.env'; echo \"A=\$A\""
    [ "$status" -eq 1 ] || {
      echo "accepted: $bad → $output"
      return 1
    }
    [[ "$output" == *"$T/bad.env:3: A: "* ]] || {
      echo "message for $bad: $output"
      return 1
    }
    [ ! -e "$T/pwned" ]
  done
}

@test "load_env_file takes quoted values, concatenations and references" {
  printf '%s\n' "A='a b' # a comment" 'B="x${A}y"' "C='it'\"'\"'s'" 'D=${A}-${B}' "E=''" "F='https://h/x?y=1'" 'G=https://h/x' >"$T/q.env"
  run hf "load_env_file '$T/q.env'; printf '%s|' \"\$A\" \"\$B\" \"\$C\" \"\$D\" \"\$E\" \"\$F\" \"\$G\""
  [ "$status" -eq 0 ]
  [ "$output" = "a b|xa by|it's|a b-xa by||https://h/x?y=1|https://h/x|" ]
}

@test "load_env_file refuses names that change how programs run, and special files" {
  local name
  for name in PATH LD_PRELOAD BASH_ENV IFS PYTHONPATH HALOFORGE_DRY_RUN lower; do
    printf '%s=/tmp/x\n' "$name" >"$T/n.env"
    run hf "load_env_file '$T/n.env'"
    if [ "$status" -ne 1 ] || [[ "$output" != *"$T/n.env:1: $name cannot be set from an env file"* ]]; then
      echo "$name: $output"
      return 1
    fi
  done
  run hf "load_env_file /dev/zero"
  [ "$status" -eq 1 ]
  [[ "$output" == *"not a readable regular file"* ]]
  mkfifo "$T/fifo.env"
  run timeout 5 bash -c ". \"\$LIB/common.sh\"; load_env_file '$T/fifo.env'"
  [ "$status" -eq 1 ]
  [[ "$output" == *"not a readable regular file"* ]]
}

@test "under the runner a step's pins are its environment: no file is read" {
  export HALOFORGE_RUN_ID=20261124-101500-a1b2c3
  # the runner's values, an empty pin declared empty
  GPU_TARGET=gfx1100 ROCM_VERSION=7.99.0 HALOFORGE_PIN_NAMES="GPU_TARGET ROCM_VERSION LLAMA_MODEL" \
    run hf 'load_pins; echo "$GPU_TARGET $ROCM_VERSION [${LLAMA_MODEL-unset}]"'
  [ "$status" -eq 0 ]
  [ "$output" = "gfx1100 7.99.0 []" ]
  # a pins file handed over, even a hostile one, is not read: no value from it, nothing runs
  printf 'ROCM_VERSION=1.0\nHF_EVIL=$(touch %s/pwned-toctou; echo x)\n' "$T" >"$T/pins.env"
  HALOFORGE_PINS_FILE=$T/pins.env HALOFORGE_PIN_NAMES="ROCM_VERSION" ROCM_VERSION=7.99.0 \
    run hf 'load_pins; echo "$ROCM_VERSION HF_EVIL=${HF_EVIL-unset}"'
  [ "$status" -eq 0 ]
  [ "$output" = "7.99.0 HF_EVIL=unset" ]
  [ ! -e "$T/pwned-toctou" ]
  # no names from the runner: no fallback to the versions.env next to the scripts tree
  run hf 'load_pins; echo "loaded ${ROCM_VERSION:-nothing}"'
  [ "$status" -eq 1 ]
  [[ "$output" == *"haloforge's runner gave this step no pins"* ]]
  # a name that would change how programs run is refused
  HALOFORGE_PIN_NAMES="GPU_TARGET LD_PRELOAD" run hf 'load_pins'
  [ "$status" -eq 1 ]
  [[ "$output" == *"HALOFORGE_PIN_NAMES names LD_PRELOAD, which cannot be a pin"* ]]
  # a glob is a word, not the files it would match
  (cd "$T" && HALOFORGE_PIN_NAMES="GPU_TARGET *" run hf 'load_pins'
    [ "$status" -eq 1 ]
    [[ "$output" == *"HALOFORGE_PIN_NAMES names *, which cannot be a pin"* ]])
  # the box's half gets every pin named, and no file is consulted for names
  HALOFORGE_PIN_NAMES="GPU_TARGET ROCM_VERSION" run hf 'hf_pin_names'
  [ "$status" -eq 0 ]
  [ "$output" = $'GPU_TARGET\nROCM_VERSION' ]
}

@test "toolbox.env: the environment under the runner, the checkout's by hand, never ./toolbox" {
  mkdir -p "$T/cwd/toolbox"
  printf 'WORK_DIR=/workspace$(touch %s/pwned-tbx)\n' "$T" >"$T/cwd/toolbox/toolbox.env"
  cd "$T/cwd"
  run hf 'hf_init; load_toolbox_env_file; echo "WORK_DIR=$WORK_DIR VENV_DIR=$VENV_DIR"'
  [ "$status" -eq 0 ]
  [[ "$output" == *"WORK_DIR=/workspace VENV_DIR=/opt/venv" ]]
  [ ! -e "$T/pwned-tbx" ]
  # by hand, a file named in HALOFORGE_TOOLBOX_ENV_FILE is read with the strict reader
  printf 'WORK_DIR=/w\nVENV_DIR=/v\n' >"$T/tbx.env"
  HALOFORGE_TOOLBOX_ENV_FILE=$T/tbx.env run hf 'hf_init; load_toolbox_env_file; echo "WORK_DIR=$WORK_DIR VENV_DIR=$VENV_DIR"'
  [ "$status" -eq 0 ]
  [[ "$output" == *"WORK_DIR=/w VENV_DIR=/v" ]]
  HALOFORGE_TOOLBOX_ENV_FILE=$T/cwd/toolbox/toolbox.env run hf 'hf_init; load_toolbox_env_file'
  [ "$status" -eq 1 ]
  [[ "$output" == *"toolbox.env:1: WORK_DIR: only plain words"* ]]
  [ ! -e "$T/pwned-tbx" ]
  # under the runner the values are the environment's; the hostile file is not read
  export HALOFORGE_RUN_ID=20261124-101500-a1b2c3
  WORK_DIR=/w VENV_DIR=/v GPU_TARGET=gfx1151 HALOFORGE_PIN_NAMES="GPU_TARGET WORK_DIR VENV_DIR" \
    HALOFORGE_TOOLBOX_ENV_FILE=$T/cwd/toolbox/toolbox.env \
    run hf 'hf_init; load_toolbox_env_file; echo "WORK_DIR=$WORK_DIR VENV_DIR=$VENV_DIR"'
  [ "$status" -eq 0 ]
  [[ "$output" == *"WORK_DIR=/w VENV_DIR=/v" ]]
  [ ! -e "$T/pwned-tbx" ]
}

@test "the checkout's versions.env loads with its references resolved" {
  run hf "load_pins; echo \"\$PYTORCH_ROCM_ARCH \$TORCH_VERSION\""
  local want_rocm
  want_rocm=$(sed -n 's/^ROCM_VERSION=//p' "$LIB/../../versions.env")
  [ "$output" = "gfx1151 2.11.0+rocm$want_rocm" ] || [[ "$output" == "gfx1151 "*"+rocm$want_rocm" ]]
}

@test "max_jobs is about a quarter of the RAM in GiB, capped by the CPUs, at least 1" {
  local cpus
  cpus=$(nproc)
  run env HALOFORGE_MEM_GIB=2 bash -c ". \"\$LIB/common.sh\"; max_jobs"
  [ "$output" = 1 ]
  run env HALOFORGE_MEM_GIB=4096 bash -c ". \"\$LIB/common.sh\"; max_jobs"
  [ "$output" = "$cpus" ]
  run env HALOFORGE_MEM_GIB=8 bash -c ". \"\$LIB/common.sh\"; max_jobs"
  [ "$output" = "$((cpus < 2 ? cpus : 2))" ]
  run env MAX_JOBS=5 bash -c ". \"\$LIB/common.sh\"; max_jobs"
  [ "$output" = 5 ]
}

@test "mem_gib reads /proc/meminfo" {
  run hf "mem_gib"
  local kb
  kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
  [ "$output" = "$((kb / 1048576))" ]
}

@test "cache_dir is per step and key; cached_wheel picks the newest wheel" {
  run env HALOFORGE_CACHE_DIR=/c HALOFORGE_STEP=vllm HALOFORGE_CACHE_KEY=abc bash -c ". \"\$LIB/common.sh\"; cache_dir wheels"
  [ "$output" = /c/wheels/vllm/abc ]
  mkdir "$T/w"
  touch -d '2020-01-01' "$T/w/vllm-0.1-cp312.whl"
  touch "$T/w/vllm-0.2-cp312.whl" "$T/w/other-1.whl"
  run hf "cached_wheel '$T/w' 'vllm-*.whl'"
  [ "$output" = "$T/w/vllm-0.2-cp312.whl" ]
  run hf "cached_wheel '$T/w' 'flash_attn-*.whl'"
  [ "$status" -eq 1 ]
  run hf "cached_wheel '$T/none' 'vllm-*.whl'"
  [ "$status" -eq 1 ]
}

@test "same_image treats podman's full names as the short ones" {
  run hf "same_image ubuntu:24.04 docker.io/library/ubuntu:24.04"
  [ "$status" -eq 0 ]
  run hf "same_image kyuz0/x:1 docker.io/kyuz0/x:1"
  [ "$status" -eq 0 ]
  run hf "same_image localhost/img localhost/img:latest"
  [ "$status" -eq 0 ]
  run hf "same_image ubuntu:24.04 ubuntu:22.04"
  [ "$status" -eq 1 ]
  run hf "same_image registry.fedoraproject.org/fedora-toolbox:43 docker.io/library/fedora:43"
  [ "$status" -eq 1 ]
}

@test "box_path maps host paths to what distrobox mounts" {
  run env HOME=/home/u bash -c ". \"\$LIB/common.sh\"; box_path /home/u/.local/state/x; box_path /tmp/y; box_path /work/main/scripts"
  [ "${lines[0]}" = /home/u/.local/state/x ]
  [ "${lines[1]}" = /tmp/y ]
  [ "${lines[2]}" = /run/host/work/main/scripts ]
}

@test "distrobox_run adds --root for rootful podman" {
  HALOFORGE_DRY_RUN=1 HALOFORGE_DISTROBOX_ROOT=1 run hf "TOOLBOX_NAME=b; in_box echo hi"
  [ "$output" = "[dry-run] distrobox enter --root b -- echo hi" ]
  HALOFORGE_DRY_RUN=1 run hf "TOOLBOX_NAME=b; in_box echo hi"
  [ "$output" = "[dry-run] distrobox enter b -- echo hi" ]
}

@test "write_box_env hands pins and HALOFORGE_* over, quoted, with box paths" {
  run env HOME=/home/u HALOFORGE_STATE_DIR=/srv/state HALOFORGE_TRACK=t VLLM_REF='a b' \
    bash -c ". \"\$LIB/common.sh\"; write_box_env '$T/e'"
  [ "$status" -eq 0 ]
  grep -qx "export HALOFORGE_STATE_DIR=/run/host/srv/state" "$T/e"
  grep -qx "export HALOFORGE_TRACK=t" "$T/e"
  grep -qx "export VLLM_REF=a\\\\ b" "$T/e"
  run bash -c ". '$T/e'; echo \"\$VLLM_REF\""
  [ "$output" = "a b" ]
}

@test "write_box_env hands over pip's mirror and proxy settings whole, host paths as the box sees them" {
  run env HOME=/home/u HALOFORGE_TRACK=t \
    PIP_INDEX_URL=http://127.0.0.1:8080/simple/ \
    PIP_EXTRA_INDEX_URL='https://a.example/simple https://b.example/simple' \
    PIP_FIND_LINKS='/srv/wheels file:///srv/more /home/u/w /tmp/w https://c.example/links' \
    PIP_CERT=/etc/ssl/corp.pem REQUESTS_CA_BUNDLE=/home/u/ca.pem SSL_CERT_FILE=/etc/ssl/corp.pem \
    https_proxy='http://user:pa$$"w@proxy:3128' NO_PROXY=localhost,127.0.0.1 \
    HF_PYTHON_PINS=/var/tmp/it/pins.txt PIPX_HOME=/srv/pipx UNRELATED=1 \
    bash -c ". \"\$LIB/common.sh\"; write_box_env '$T/e'"
  [ "$status" -eq 0 ]
  # Only the user reads it: a proxy URL may carry a password.
  [ "$(stat -c %a "$T/e")" = 600 ]
  run env -i bash -c ". '$T/e'; printf '%s\n' \"\$PIP_INDEX_URL\" \"\$PIP_EXTRA_INDEX_URL\" \"\$PIP_FIND_LINKS\" \"\$PIP_CERT\" \"\$REQUESTS_CA_BUNDLE\" \"\$SSL_CERT_FILE\" \"\$https_proxy\" \"\$NO_PROXY\" \"\$HF_PYTHON_PINS\" \"\${PIPX_HOME-unset}\" \"\${UNRELATED-unset}\""
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = http://127.0.0.1:8080/simple/ ]
  [ "${lines[1]}" = 'https://a.example/simple https://b.example/simple' ]
  [ "${lines[2]}" = '/run/host/srv/wheels file:///run/host/srv/more /home/u/w /tmp/w https://c.example/links' ]
  [ "${lines[3]}" = /run/host/etc/ssl/corp.pem ]
  [ "${lines[4]}" = /home/u/ca.pem ]
  [ "${lines[5]}" = /run/host/etc/ssl/corp.pem ]
  [ "${lines[6]}" = 'http://user:pa$$"w@proxy:3128' ]
  [ "${lines[7]}" = localhost,127.0.0.1 ]
  [ "${lines[8]}" = /run/host/var/tmp/it/pins.txt ]
  [ "${lines[9]}" = unset ]
  [ "${lines[10]}" = unset ]
}

@test "write_box_env leaves unexported pip settings and a value without paths as they are" {
  run env HOME=/home/u PIP_TRUSTED_HOST=$'mirror.lan\tother.lan' \
    bash -c ". \"\$LIB/common.sh\"; PIP_NO_INDEX=1; write_box_env '$T/e'"
  [ "$status" -eq 0 ]
  run grep -c PIP_NO_INDEX "$T/e"
  [ "$output" = 0 ]
  run env -i bash -c ". '$T/e'; printf '%s' \"\$PIP_TRUSTED_HOST\""
  [ "$output" = $'mirror.lan\tother.lan' ]
}

@test "cache_prune keeps the current key and the most recent others" {
  for k in k1 k2 k3 k4; do
    mkdir -p "$T/c/wheels/vllm/$k"
  done
  touch -d '2020-01-01' "$T/c/wheels/vllm/k1"
  touch -d '2021-01-01' "$T/c/wheels/vllm/k2"
  touch -d '2022-01-01' "$T/c/wheels/vllm/k4"
  touch -d '2019-01-01' "$T/c/wheels/vllm/k3"
  run env HALOFORGE_CACHE_DIR="$T/c" HALOFORGE_STEP=vllm HALOFORGE_CACHE_KEY=k3 bash -c ". \"\$LIB/common.sh\"; cache_prune wheels 2"
  [ "$status" -eq 0 ]
  [ "$(cd "$T/c/wheels/vllm" && echo *)" = "k2 k3 k4" ]
  [[ "$output" == *"removing $T/c/wheels/vllm/k1"* ]]
}

@test "hf_verified and hf_not_verified append one line each to HALOFORGE_RESULT_FILE and log it" {
  export HALOFORGE_RESULT_FILE=$T/results.tsv
  run hf 'hf_verified "a kernel	ran
on gfx1151"; hf_not_verified "no model"'
  [ "$status" -eq 0 ]
  [ "$output" = $'verified: a kernel ran on gfx1151\nnot verified: no model' ]
  [ "$(cat "$T/results.tsv")" = $'verified\ta kernel ran on gfx1151\nnot-verified\tno model' ]
  # a dry run proves nothing and records nothing
  HALOFORGE_DRY_RUN=1 run hf 'hf_verified x'
  [ "$(wc -l <"$T/results.tsv")" -eq 2 ]
  # without the runner's file the lines still reach the log
  unset HALOFORGE_RESULT_FILE
  run hf 'hf_verified alone'
  [ "$output" = "verified: alone" ]
}

@test "hf_run_checks turns a check's verified:/not-verified: lines into results and keeps its status" {
  export HALOFORGE_RESULT_FILE=$T/results.tsv
  run hf 'hf_verify_begin; hf_run_checks sh -c "echo detail; echo verified: it ran; echo not-verified: offline"; echo rc=$?; hf_verify_end'
  [[ "$output" == *"detail"*"verified: it ran"*"not verified: offline"*"rc=0"* ]]
  [ "$(cut -f1 "$T/results.tsv" | paste -sd,)" = verified,not-verified ]
  run hf 'hf_run_checks sh -c "echo FAIL: no GPU; exit 1" || echo rc=$?'
  [[ "$output" == *"FAIL: no GPU"*"rc=1"* ]]
}

@test "a verify that recorded nothing ends with a not-verified line, never a silent pass" {
  export HALOFORGE_RESULT_FILE=$T/results.tsv
  run hf 'hf_verify_begin; echo checked nothing; hf_verify_end'
  [ "$status" -eq 0 ]
  [ "$(cat "$T/results.tsv")" = $'not-verified\tthe verify step ran no check that proves the stack works' ]
}

# pyproject NAME CONTENT: a source tree whose pyproject.toml is CONTENT.
pyproject() {
  mkdir -p "$T/$1"
  printf '%s\n' "$2" >"$T/$1/pyproject.toml"
}

@test "build_requires.py reads [build-system] requires in the shapes upstream uses" {
  # AITER v0.1.19 (ROCm/aiter pyproject.toml): extras, an exact pin, no build-backend.
  pyproject aiter '[build-system]
requires = [
    "pybind11>=3.0.1",
    "setuptools>=45",
    "setuptools_scm[toml]>=6.2",
    "wheel",
    "packaging",
    "psutil",
    "ninja",
    "pandas",
    "flydsl==0.2.4"
]

[tool.setuptools_scm]
write_to = "aiter/_version.py"'
  run python3 "$LIB/build_requires.py" "$T/aiter" --pins "$LIB/python-pins.txt"
  [ "$status" -eq 0 ]
  [ "$(grep -v '^build_requires:' <<<"$output" | paste -sd' ')" = 'pybind11>=3.0.1 setuptools>=45 setuptools_scm[toml]>=6.2 wheel packaging psutil ninja pandas flydsl==0.2.4' ]
  # vLLM (pyproject.toml [build-system]): cmake and torch come from the distro and the venv.
  pyproject vllm '[build-system]
# Should be mirrored in requirements/build.txt
requires = ["cmake>=3.26.1", "ninja", "packaging>=24.2", "setuptools>=77.0.3,<80.0.0", "setuptools-scm>=8.0", "torch == 2.11.0", "wheel", "jinja2"]
build-backend = "setuptools.build_meta"'
  run python3 "$LIB/build_requires.py" "$T/vllm" --pins "$LIB/python-pins.txt" --exclude torch --exclude cmake
  [ "$status" -eq 0 ]
  [ "$(grep -v '^build_requires:' <<<"$output" | paste -sd' ')" = 'ninja packaging>=24.2 setuptools>=77.0.3,<80.0.0 setuptools-scm>=8.0 wheel jinja2' ]
  # flash-attention @16d5154a: no pyproject.toml at all; a [project]-only file: PEP 517 default.
  mkdir -p "$T/fa"
  run python3 "$LIB/build_requires.py" "$T/fa"
  [ "$(grep -v '^build_requires:' <<<"$output" | paste -sd' ')" = 'setuptools>=40.8.0 wheel' ]
  pyproject proj '[project]
name = "x"'
  run python3 "$LIB/build_requires.py" "$T/proj"
  [ "$(grep -v '^build_requires:' <<<"$output" | paste -sd' ')" = 'setuptools>=40.8.0 wheel' ]
}

@test "build_requires.py refuses what pip would refuse, and names an unpinned or unsatisfied tool" {
  pyproject norequires '[build-system]
build-backend = "setuptools.build_meta"'
  run python3 "$LIB/build_requires.py" "$T/norequires"
  [ "$status" -eq 2 ]
  [[ "$output" == *"[build-system] has no \`requires\` key"* ]]
  pyproject bad '[build-system
requires = ['
  run python3 "$LIB/build_requires.py" "$T/bad"
  [ "$status" -eq 2 ]
  [[ "$output" == *"not valid TOML"* ]]
  pyproject newtool '[build-system]
requires = ["setuptools>=83.0.0", "scikit-build-core"]'
  run python3 "$LIB/build_requires.py" "$T/newtool" --pins "$LIB/python-pins.txt"
  [ "$status" -eq 3 ]
  [[ "$output" == *"'scikit-build-core' has no pin in $LIB/python-pins.txt: add scikit-build-core==<version>"* ]]
  if python3 -c 'import packaging' 2>/dev/null; then
    [[ "$output" == *"'setuptools>=83.0.0' is not satisfied by the pin setuptools==79.0.1"* ]]
  fi
  run python3 "$LIB/build_requires.py" "$T/newtool" --pins "$LIB/python-pins.txt" --allow-unpinned
  [ "$status" -eq 0 ]
  [[ "$output" == *"warning: 'scikit-build-core' has no pin"* ]]
}

@test "python-pins.txt pins every entry exactly, and the pins satisfy the pinned refs' specifiers" {
  run hf 'python_pin setuptools_scm; python_pin Jinja2; python_pin nosuch'
  [ "$status" -ne 0 ]
  [[ "$output" == *"setuptools-scm==8.3.1"*"jinja2==3.1.6"*"nosuch has no pin"* ]]
  run grep -vE '^(#.*|[a-z0-9-]+==[0-9][0-9A-Za-z.+]*|)$' "$LIB/python-pins.txt"
  [ "$status" -eq 1 ]
}

# pkgwheel NAME VERSION DIR: write a tiny valid wheel of NAME into DIR (the files PEP 427
# asks for, made with zipfile: no build backend, no network).
pkgwheel() {
  mkdir -p "$3"
  python3 - "$@" <<'PY'
import base64, hashlib, sys, zipfile
name, version, out = sys.argv[1:4]
di = f"{name}-{version}.dist-info"
files = {f"{name}/__init__.py": f'__version__ = "{version}"\n',
         f"{di}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
         f"{di}/WHEEL": "Wheel-Version: 1.0\nGenerator: haloforge-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
record = []
with zipfile.ZipFile(f"{out}/{name}-{version}-py3-none-any.whl", "w") as z:
    for path, text in files.items():
        data = text.encode()
        z.writestr(path, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{di}/RECORD,,")
    z.writestr(f"{di}/RECORD", "\n".join(record) + "\n")
PY
}

@test "hf_fact_pip_report records what pip --report says it installed, with the wheel's sha256" {
  pkgwheel hfrrfact 1.2.3 "$T/wheels"
  local whl
  whl=$(ls "$T"/wheels/hfrrfact-1.2.3-*.whl)
  export HALOFORGE_FACTS_FILE=$T/step.facts
  run hf "rep=\$(hf_pip_report); python3 -m pip install -q --no-index --target '$T/site' '$whl' --report \"\$rep\"; hf_fact_pip_report \"\$rep\"; [ ! -e \"\$rep\" ]"
  [ "$status" -eq 0 ]
  local want
  want=$(printf 'wheel\thfrrfact==1.2.3\tfile://%s\t%s' "$whl" "$(sha256sum "$whl" | cut -d' ' -f1)")
  [ "$(cat "$T/step.facts")" = "$want" ]
}

@test "hf_fact_pip_report: VCS checkouts as git facts, no credentials, no local trees, nothing broken" {
  cat >"$T/report.json" <<'JSON'
{"version": "1", "install": [
 {"metadata": {"name": "a", "version": "1.0"}, "download_info": {"url": "https://user:tok3n@idx.example/a-1.0-py3-none-any.whl", "archive_info": {"hashes": {"sha256": "0000000000000000000000000000000000000000000000000000000000000000"}}}},
 {"metadata": {"name": "b", "version": "2.0"}, "download_info": {"url": "https://idx.example/b-2.0.tar.gz", "archive_info": {"hash": "sha256=1111111111111111111111111111111111111111111111111111111111111111"}}},
 {"metadata": {"name": "c", "version": "3.0"}, "download_info": {"url": "https://git.example/c.git", "vcs_info": {"vcs": "git", "requested_revision": "v3.0", "commit_id": "2222222222222222222222222222222222222222"}}},
 {"metadata": {"name": "d", "version": "4.0"}, "download_info": {"url": "file:///src/d", "dir_info": {}}},
 {"metadata": {"name": "e\tx", "version": "5.0"}, "download_info": {"url": "https://idx.example/e.whl", "archive_info": {"hashes": {"sha256": "3333333333333333333333333333333333333333333333333333333333333333"}}}}
]}
JSON
  export HALOFORGE_FACTS_FILE=$T/step.facts
  run hf "hf_fact_pip_report '$T/report.json'"
  [ "$status" -eq 0 ]
  [ "$(sed -n 1p "$T/step.facts")" = "$(printf 'wheel\ta==1.0\thttps://idx.example/a-1.0-py3-none-any.whl\t%064d' 0)" ]
  [ "$(sed -n 2p "$T/step.facts")" = "$(printf 'wheel\tb==2.0\thttps://idx.example/b-2.0.tar.gz\t%s' "$(printf '1%.0s' {1..64})")" ]
  [ "$(sed -n 3p "$T/step.facts")" = "$(printf 'git\thttps://git.example/c.git\tv3.0\t%s' "$(printf '2%.0s' {1..40})")" ]
  [ "$(wc -l <"$T/step.facts")" -eq 3 ]
  run grep -c tok3n "$T/step.facts"
  [ "$output" = 0 ]
  [ ! -e "$T/report.json" ]
}

@test "hf_fact_time records a time the step measured as the runner reads it; a bad name or value, or a dry run, records nothing" {
  export HALOFORGE_FACTS_FILE=$T/step.facts
  run hf "hf_fact_time engine 1216; hf_fact_time Engine 5; hf_fact_time engine -5; hf_fact_time engine 1.5; hf_fact_time 'a b' 5"
  [ "$status" -eq 0 ]
  [ "$(cat "$T/step.facts")" = "$(printf 'time\tengine\t1216')" ]
  [[ "$output" == *"haloforge: engine time 1216 ms"* ]]
  [[ "$output" == *"not recorded: a time is NAME"* ]]
  run hf "HALOFORGE_DRY_RUN=1 hf_fact_time engine 7"
  [ "$status" -eq 0 ]
  [ "$(wc -l <"$T/step.facts")" -eq 1 ]
}

@test "hf_fact_git and hf_fact_image record the commit and the digest; a dry run and a run by hand record nothing" {
  git -C "$T" init -q repo
  git -C "$T/repo" -c user.email=t@t -c user.name=t commit -q --allow-empty -m one
  local sha
  sha=$(git -C "$T/repo" rev-parse HEAD)
  export HALOFORGE_FACTS_FILE=$T/step.facts
  # a stand-in engine: podman's inspect of a pulled image, with a second repository's digest
  cat >"$T/fakeengine" <<'SH'
#!/bin/sh
case $4 in
  '{{.Digest}}') echo sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb ;;
  *) printf '%s\n' other.example/x@sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc \
       docker.io/library/ubuntu@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa \
       docker.io/library/ubuntu@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb ;;
esac
SH
  chmod +x "$T/fakeengine"
  run hf "hf_fact_git '$T/repo' https://git.example/r.git v1; hf_fact_image ubuntu:24.04 '$T/fakeengine'"
  [ "$status" -eq 0 ]
  [ "$(sed -n 1p "$T/step.facts")" = "$(printf 'git\thttps://git.example/r.git\tv1\t%s' "$sha")" ]
  [ "$(sed -n 2p "$T/step.facts")" = "$(printf 'image\tubuntu:24.04\tsha256:%s' "$(printf 'b%.0s' {1..64})")" ]
  rm "$T/step.facts"
  HALOFORGE_DRY_RUN=1 run hf "hf_fact_git '$T/repo' https://git.example/r.git v1; hf_fact_image ubuntu:24.04 '$T/fakeengine'"
  [ "$status" -eq 0 ]
  [ ! -e "$T/step.facts" ]
  unset HALOFORGE_FACTS_FILE
  run hf "hf_fact_git '$T/repo' https://git.example/r.git v1"
  [ "$status" -eq 0 ]
  [[ "$output" == *"resolved: https://git.example/r.git v1 is $sha"* ]]
}

@test "hf_fact_git REV: the commit a tag names (TheRock's THEROCK_UPSTREAM_DIFFBASE under its hipify commit); a missing REV records nothing" {
  git -C "$T" init -q repo
  git -C "$T/repo" -c user.email=t@t -c user.name=t commit -q --allow-empty -m upstream
  local up
  up=$(git -C "$T/repo" rev-parse HEAD)
  git -C "$T/repo" tag THEROCK_UPSTREAM_DIFFBASE
  git -C "$T/repo" -c user.email=t@t -c user.name=t commit -q --allow-empty -m "DO NOT SUBMIT: HIPIFY"
  export HALOFORGE_FACTS_FILE=$T/step.facts
  run hf "hf_fact_git '$T/repo' https://github.com/ROCm/pytorch.git release/2.11 THEROCK_UPSTREAM_DIFFBASE"
  [ "$status" -eq 0 ]
  [ "$(cat "$T/step.facts")" = "$(printf 'git\thttps://github.com/ROCm/pytorch.git\trelease/2.11\t%s' "$up")" ]
  rm "$T/step.facts"
  run hf "hf_fact_git '$T/repo' https://github.com/ROCm/pytorch.git release/2.11 NO_SUCH_TAG"
  [ "$status" -eq 0 ]
  [[ "$output" == *"not recorded"* ]]
  [ ! -e "$T/step.facts" ]
}

@test "row 16: image_digest under docker gives the image's own repository digest, not the first of .RepoDigests" {
  mkdir -p "$T/bin"
  cat >"$T/bin/docker" <<'SH'
#!/bin/sh
case $4 in
  '{{.Digest}}') exit 1 ;; # docker's inspect has no .Digest
  *) printf '%s\n' other.example/x@sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc \
       docker.io/rocm/vllm@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa ;;
esac
SH
  chmod +x "$T/bin/docker"
  run env PATH="$T/bin:$PATH" HALOFORGE_CONTAINER_ENGINE=docker bash -c ". \"\$LIB/common.sh\"; . \"\$LIB/container.sh\"; image_digest rocm/vllm:rocm10"
  [ "$status" -eq 0 ]
  [ "$output" = "sha256:$(printf 'a%.0s' {1..64})" ]
}

@test "hf_mkdir makes, marks and records a directory; one already there without the marker is not haloforge's" {
  export HALOFORGE_FACTS_FILE=$T/step.facts HALOFORGE_OWNER=20261129-093012-a1b2c3.0123456789ab
  mkdir -p "$T/theirs"
  run hf "hf_mkdir cache '$T/new/wheels'; hf_mkdir cache '$T/theirs'"
  [ "$status" -eq 0 ]
  [ "$(cat "$T/new/wheels/.haloforge-owner")" = "$HALOFORGE_OWNER" ]
  [ ! -e "$T/theirs/.haloforge-owner" ]
  [ "$(cat "$T/step.facts")" = "$(printf 'created\tdir\tcache\t%s' "$T/new/wheels")" ]
  # a later run finds its own marker: recorded again, the marker kept
  rm "$T/step.facts"
  HALOFORGE_OWNER=20261130-100000-ffffff.ffffffffffff run hf "hf_mkdir cache '$T/new/wheels'"
  [ "$(cat "$T/new/wheels/.haloforge-owner")" = "20261129-093012-a1b2c3.0123456789ab" ]
  [ "$(cat "$T/step.facts")" = "$(printf 'created\tdir\tcache\t%s' "$T/new/wheels")" ]
  # a dry run makes and records nothing
  rm "$T/step.facts"
  HALOFORGE_DRY_RUN=1 run hf "hf_mkdir venv '$T/dry'"
  [ "$output" = "[dry-run] mkdir -p $T/dry" ]
  [ ! -e "$T/dry" ]
  [ ! -e "$T/step.facts" ]
}

@test "hf_created_file and hf_created_dir record what the step just made; inside the box a path the host cannot see goes with the box" {
  export HALOFORGE_FACTS_FILE=$T/step.facts HALOFORGE_OWNER=20261129-093012-a1b2c3.0123456789ab HOME=$T/home
  mkdir -p "$T/home/models" "$T/home/venv"
  printf 'GGUF' >"$T/home/models/tiny.gguf"
  ln -s "$T/home/models/tiny.gguf" "$T/home/link.gguf"
  run hf "hf_created_file model '$T/home/models/tiny.gguf'; hf_created_file model '$T/home/link.gguf'; hf_created_dir venv '$T/home/venv'"
  [ "$status" -eq 0 ]
  [[ "$output" == *"$T/home/link.gguf is not a file: not recorded"* ]]
  [ "$(sed -n 1p "$T/step.facts")" = "$(printf 'created\tfile\tmodel\t%s' "$T/home/models/tiny.gguf")" ]
  [ "$(sed -n 2p "$T/step.facts")" = "$(printf 'created\tdir\tvenv\t%s' "$T/home/venv")" ]
  [ "$(wc -l <"$T/step.facts")" -eq 2 ]
  rm "$T/step.facts"
  mkdir -p "$T/opt-venv"
  # in the box: /opt/… is the box's own, the home is the host's
  HALOFORGE_IN_BOX=1 TOOLBOX_NAME=haloforge-therock run hf "_hf_record_path dir venv /opt/venv; hf_created_dir venv '$T/home/venv'"
  [ "$(sed -n 1p "$T/step.facts")" = "$(printf 'created\tin-box\thaloforge-therock\tvenv\t/opt/venv')" ]
  [ "$(sed -n 2p "$T/step.facts")" = "$(printf 'created\tdir\tvenv\t%s' "$T/home/venv")" ]
}

@test "hf_owner_flags labels with the run's owner token; hf_created_box and hf_created_image record the box and the image with their engine" {
  export HALOFORGE_FACTS_FILE=$T/step.facts HALOFORGE_OWNER=20261129-093012-a1b2c3.0123456789ab HALOFORGE_TRACK=fx
  run hf "hf_owner_flags"
  [ "$output" = "$(printf -- '--label\nio.haloforge.owner=%s' "$HALOFORGE_OWNER")" ]
  HALOFORGE_OWNER='' run hf "hf_owner_flags"
  [ "$output" = "" ]
  # a stand-in engine answering podman's image inspect
  cat >"$T/podman" <<'SH'
#!/bin/sh
case $4 in
  '{{.Id}}') echo sha256:dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd ;;
  '{{.Size}}') echo 161373259 ;;
esac
SH
  chmod +x "$T/podman"
  run hf "DBX_CONTAINER_MANAGER=podman PATH='$T':\$PATH; hf_created_box haloforge-llamacpp; hf_created_image localhost/hf:1 built '$T/podman'; HALOFORGE_DISTROBOX_ROOT=1 hf_created_box rootful"
  [ "$status" -eq 0 ]
  [[ "$output" == *"recorded: haloforge created box haloforge-llamacpp (haloforge clean --track fx removes it)"* ]]
  [ "$(sed -n 1p "$T/step.facts")" = "$(printf 'created\tbox\thaloforge-llamacpp\tpodman')" ]
  [ "$(sed -n 2p "$T/step.facts")" = "$(printf 'created\timage\tlocalhost/hf:1\t%s\tpodman\tbuilt\t161373259' "$(printf 'd%.0s' {1..64})")" ]
  if [ "$(id -u)" -ne 0 ]; then
    [ "$(sed -n 3p "$T/step.facts")" = "$(printf 'created\tbox\trootful\tsudo-podman')" ]
  fi
}

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# llamacpp-distro step "verify": llama-bench runs a model on the chosen GPU backend's first
# device (-dev), and its own JSON says so: "devices" is that device, a GPU in "gpu_info",
# layers offloaded, the backend among "backends" (which alone lists only what is compiled
# in: lib/llama_gpu_evidence.py, shared with the other llama.cpp tracks). Runs inside the box.
#
# Pins: LLAMA_MODEL (a GGUF file). Without it, a tiny random-weight llama model (about
# 0.7 MB) is written with python3-gguf into $HALOFORGE_STATE_DIR/llamacpp-distro: that
# proves kernels run on the backend, and its numbers are no speed claim.
# Benchmark: llama-bench -o json -r 3 -fa 1 -ngl 999, without mmap (-mmp 0 on builds that
# have it, -lm none on builds that replaced it), on the backend's first device (-dev).
# Answers: llama-server on that device answers haloforge verify's prompt set, compared with
# haloforge's reference for the same GGUF on llama.cpp's CPU backend (lib/llama.sh's
# llama_answers; the reference is recorded once per model and kept in the state dir): right
# proves the backend computes what the CPU does; WRONG OUTPUT fails the step with the
# evidence; no verdict is "not verified" with the reason.
# Result: "verified<TAB>…" or "not-verified<TAB>…" in $HALOFORGE_RESULT_FILE; the JSON is
# kept in the run directory and as $HALOFORGE_STATE_DIR/llamacpp-distro/llama-bench.json
# for `haloforge bench --from`.
# HALOFORGE_ALLOW_NO_GPU=1 (tests): when Vulkan finds no GPU, llvmpipe (Mesa's CPU Vulkan
# device) is selected with GGML_VK_VISIBLE_DEVICES and the result says so.

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/llama.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/llama.sh"
# shellcheck source=./lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
hf_init "$@"
distro_init
enter_box "$@"

# not_verified REASON: record the reason and fail the step.
not_verified() {
  hf_not_verified "$1"
  die "$1"
}

BACKEND=vulkan
if [[ -r "$(backend_file)" ]]; then
  BACKEND=$(sed -n 's/^backend=//p' "$(backend_file)")
elif ! is_dry_run; then
  not_verified "no backend recorded in $(backend_file): run the packages step first (haloforge build --track llamacpp-distro --only packages)"
fi
case $BACKEND in
  vulkan) PREFIX=Vulkan ;;
  hip) PREFIX=ROCm ;;
  *) not_verified "unknown backend '$BACKEND' in $(backend_file)" ;;
esac

log_step "Model"
model=${LLAMA_MODEL:-}
tiny=0
if [[ -z $model ]]; then
  tiny=1
  model=$DISTRO_STATE/tiny-random.gguf
  log_info "no LLAMA_MODEL: a tiny random-weight model proves the backend runs (no speed claim)"
  if is_dry_run; then
    run python3 "$HF_SCRIPT_DIR/tiny_model.py" "$model"
  else
    python3 -c 'import gguf, numpy' 2>/dev/null \
      || not_verified "no LLAMA_MODEL and no python3-gguf to write a tiny one: set LLAMA_MODEL=/path/to/model.gguf"
    mkdir -p "$DISTRO_STATE"
    run python3 "$HF_SCRIPT_DIR/tiny_model.py" "$model"
  fi
elif ! is_dry_run && [[ ! -r $model ]]; then
  not_verified "LLAMA_MODEL=$model: no such file (inside the box, only your home, /tmp and /run/host/… are visible)"
fi
log_info "model: $model"

# devices: llama-bench's device list, "  Vulkan0: name (…)" lines.
devices() { llama-bench --list-devices 2>&1 | sed -n 's/^ *\([A-Za-z]*[0-9][0-9]*\): /\1: /p'; }

log_step "Devices of the $PREFIX backend"
if is_dry_run; then
  run llama-bench --list-devices
  DEV=${PREFIX}0
else
  list=$(devices)
  printf '%s\n' "${list:-(none)}"
  DEV=$(grep -m1 "^${PREFIX}[0-9]*:" <<<"$list" | cut -d: -f1 || true)
  if [[ -z $DEV && $PREFIX == Vulkan && ${HALOFORGE_ALLOW_NO_GPU:-0} == 1 ]]; then
    log_warn "HALOFORGE_ALLOW_NO_GPU=1: no Vulkan GPU, so ggml's CPU-type Vulkan device (Mesa llvmpipe) is selected: GGML_VK_VISIBLE_DEVICES=0"
    export GGML_VK_VISIBLE_DEVICES=0
    list=$(devices)
    printf '%s\n' "${list:-(none)}"
    DEV=$(grep -m1 "^${PREFIX}[0-9]*:" <<<"$list" | cut -d: -f1 || true)
  fi
  [[ -n $DEV ]] || not_verified "llama-bench sees no $PREFIX device (is /dev/dri in the box, and are you in the render and video groups?)"
fi

# The no-mmap switch changed name (lib/llama.sh's llama_nommap_flags).
nommap=(-lm none) server_nommap=(--no-mmap)
if ! is_dry_run; then
  mapfile -t nommap < <(llama-bench --help 2>&1 | llama_nommap_flags || true)
  mapfile -t server_nommap < <(llama-server --help 2>&1 | llama_nommap_flags || true)
fi

if ((tiny)); then
  sizes=(-p 64 -n 16)
else
  sizes=(-p 512 -n 128)
fi
out=$HALOFORGE_RUN_DIR/llama-bench.json
bench=(llama-bench -m "$model" -o json -r 3 -fa 1 "${nommap[@]}" -ngl 999 -dev "$DEV" "${sizes[@]}")
log_step "llama-bench on $DEV"
if is_dry_run; then
  run "${bench[@]}"
  llama_answers "$model" "$model" -ngl 999 -fa on --device "$DEV" "${server_nommap[@]}"
  exit 0
fi
mkdir -p "$HALOFORGE_RUN_DIR" "$DISTRO_STATE"
log_info "env: GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-}"
code=0
# run would print its "+ command" line into the JSON: print it here, then run the command.
log_info "+ $(quote_cmd "${bench[@]}")"
"${bench[@]}" >"$out" 2>"$out.stderr" || code=$?
cat "$out.stderr"
((code == 0)) || not_verified "llama-bench failed (exit $code) on $DEV: $(tail -n1 "$out.stderr")"
cat "$out"
cp "$out" "$DISTRO_STATE/llama-bench.json"

# The proof: device evidence in every row (lib/llama_gpu_evidence.py); llvmpipe, Mesa's CPU
# Vulkan device, counts only in the HALOFORGE_ALLOW_NO_GPU=1 test mode.
allow=()
[[ ${HALOFORGE_ALLOW_NO_GPU:-0} == 1 ]] && allow=(--allow-llvmpipe)
llama_gpu_evidence bench "$out" --backend "$PREFIX" --device "$DEV" "${allow[@]}" \
  || not_verified "$EVIDENCE_WHY"
what=$EVIDENCE_SUMMARY
if ((${#allow[@]})) && grep -q '"gpu_info": "llvmpipe' "$out"; then
  what="$what; llvmpipe is a CPU Vulkan device (HALOFORGE_ALLOW_NO_GPU=1 test mode)"
fi
((tiny)) && what="$what; tiny random model: proof that kernels run, not a speed"
hf_verified "$what"

# The answers, on the same device: every layer there, flash attention, no mmap (the load
# switch llama-server shares with llama-bench).
serve_args=(-ngl 999 -fa on --device "$DEV" "${server_nommap[@]}")
if [[ -n ${GGML_VK_VISIBLE_DEVICES:-} && ${HALOFORGE_ALLOW_NO_GPU:-0} == 1 ]]; then
  # Mesa's lavapipe computes a micro-batch of more than 64 tokens wrong on Debian sid's
  # llama.cpp (build 11669) with Mesa 26.2.6 (scripts/tests/integration-verify.sh).
  serve_args+=(-ub 64)
fi
if llama_answers "$model" "$model" "${serve_args[@]}"; then
  hf_verified "answers on $DEV: $ANSWERS_LINE"
elif [[ $ANSWERS_VERDICT == wrong ]]; then
  not_verified "answers on $DEV: $ANSWERS_LINE"
else
  hf_not_verified "answers on $DEV: $ANSWERS_LINE"
fi
log_info "compare with reference numbers: haloforge bench --from $DISTRO_STATE/llama-bench.json"

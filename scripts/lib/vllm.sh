# shellcheck shell=bash
# The answers check of the vLLM tracks (sourced after common.sh by therock-toolbox's verify,
# vllm-image's and the spoof tracks'): vLLM generates haloforge verify's prompt set on the GPU
# (verify_answers.py, vLLM's offline engine) twice, eager (enforce_eager=True) and compiled
# (torch.compile and HIP graphs, the path `vllm serve` takes by default), and haloforge
# verify judges each file of answers (`verify --answers`): against haloforge's reference for
# the same model when one is kept (recorded by transformers on the CPU in float32, where the
# model fits: VLLM_CPU_REFERENCE=1, the track's own venv), else for the known answers and
# degenerate output. A stack that runs and answers "!!!!" or <unused49> is WRONG OUTPUT here,
# where a token count saw success.

# vllm_answers PY...: the check, with PY the command that runs python3 with vLLM (the venv's
# python, or a container run ending in the image and python3, in which $HALOFORGE_RUN_DIR is
# mounted at the same path and verify_answers.py at $VLLM_ANSWERS_PY). Records each pass with
# hf_verified or hf_not_verified; returns 1 when an answer was wrong.
vllm_answers() {
  local -a py=("$@") ref=()
  local lib=${VLLM_ANSWERS_PY:-$HF_LIB_DIR/verify_answers.py} model=${VERIFY_MODEL:-} hf dir mode out code line wrong=0
  if [[ -z $model ]]; then
    hf_not_verified "vLLM answers: no model given (VERIFY_MODEL is empty); set it to a small public model such as Qwen/Qwen3-0.6B"
    return 0
  fi
  if is_dry_run; then
    run "${HALOFORGE_BIN:-haloforge}" verify --prompts
    run "${py[@]}" "$lib" resolve "$model"
    for mode in eager compiled; do
      run "${py[@]}" "$lib" vllm "$mode" MODEL_DIR "$HALOFORGE_RUN_DIR/prompts.json" "$HALOFORGE_RUN_DIR/vllm-$mode.json"
      run "${HALOFORGE_BIN:-haloforge}" verify --answers "$HALOFORGE_RUN_DIR/vllm-$mode.json" --track "${HALOFORGE_TRACK:-TRACK}"
    done
    return 0
  fi
  if ! hf=$(hf_bin); then
    hf_not_verified "vLLM answers: not checked: no haloforge binary to judge them with (HALOFORGE_BIN='${HALOFORGE_BIN:-}'; the runner sets it)"
    return 0
  fi
  mkdir -p "$HALOFORGE_RUN_DIR"
  "$hf" verify --prompts >"$HALOFORGE_RUN_DIR/prompts.json"
  if ! dir=$("${py[@]}" "$lib" resolve "$model"); then
    hf_not_verified "vLLM answers with $model: ${dir:-it could not be had here}"
    return 0
  fi
  local -a hfv=("$hf" verify --state-dir "$HALOFORGE_STATE_DIR")
  if [[ ${VLLM_CPU_REFERENCE:-0} == 1 ]]; then
    if "${hfv[@]}" --reference-for "$dir" --cached; then
      ref=(--reference-for "$dir")
    elif "${py[@]}" "$lib" fits "$dir"; then
      log_step "Reference: $model on the CPU (transformers, float32)"
      if "${py[@]}" "$lib" cpu "$dir" "$HALOFORGE_RUN_DIR/prompts.json" "$HALOFORGE_RUN_DIR/cpu-reference.json" \
        && "${hfv[@]}" --answers "$HALOFORGE_RUN_DIR/cpu-reference.json" --record-for "$dir" --backend "CPU (transformers, float32)"; then
        ref=(--reference-for "$dir")
      else
        log_warn "no CPU reference could be recorded: the known-answer check runs instead"
      fi
    else
      log_info "$model does not fit on the CPU next to the rest here: the known-answer check runs instead"
    fi
  fi
  for mode in eager compiled; do
    log_step "vLLM answers, $mode ($([[ $mode == eager ]] && echo enforce_eager=True || echo 'torch.compile and HIP graphs, as vllm serve'))"
    out=$HALOFORGE_RUN_DIR/vllm-$mode.json
    code=0
    "${py[@]}" "$lib" vllm "$mode" "$dir" "$HALOFORGE_RUN_DIR/prompts.json" "$out" || code=$?
    if ((code != 0)); then
      hf_not_verified "vLLM answers, $mode: vLLM could not generate (exit $code, above)"
      wrong=1
      continue
    fi
    code=0
    "${hfv[@]}" --answers "$out" "${ref[@]}" --track "$HALOFORGE_TRACK" >"$out.txt" 2>&1 || code=$?
    cat "$out.txt"
    line=$(grep -E '^(right|WRONG OUTPUT|not verified): ' "$out.txt" | tail -n1 || true)
    case $code in
      0) hf_verified "vLLM answers, $mode: $line" ;;
      1)
        hf_not_verified "vLLM answers, $mode: $line"
        [[ $line == WRONG* ]] && wrong=1
        ;;
      *) hf_not_verified "vLLM answers, $mode: not checked: haloforge verify exit $code: $(tail -n1 "$out.txt")" ;;
    esac
  done
  ((wrong == 0))
}

# shellcheck shell=bash
# The llama.cpp tracks' shared proof that a run used the GPU (sourced after common.sh by
# llamacpp-vulkan, llamacpp-rocm and llamacpp-distro). llama-bench's backend column and its
# JSON "backends" name the backends compiled in, not the device that ran, and
# test-backend-ops passes a device it skipped: llama_gpu_evidence.py reads the device
# evidence instead (its header says what counts).

# llama_gpu_evidence MODE FILE ARGS...: run lib/llama_gpu_evidence.py MODE FILE ARGS. On
# success returns 0 with EVIDENCE_SUMMARY (one line) and EVIDENCE_RESULTS ("TEST<TAB>t/s"
# lines, bench only); otherwise returns 1 with the reason in EVIDENCE_WHY. Call it directly,
# not in $(…), so the variables reach the caller.
# shellcheck disable=SC2034 # EVIDENCE_* are read by the caller
llama_gpu_evidence() {
  local err out rc=0
  EVIDENCE_SUMMARY='' EVIDENCE_RESULTS='' EVIDENCE_WHY=''
  err=$(mktemp "${TMPDIR:-/tmp}/hf-evidence.XXXXXX")
  out=$(python3 "$HF_LIB_DIR/llama_gpu_evidence.py" "$@" 2>"$err") || rc=$?
  EVIDENCE_WHY=$(<"$err")
  rm -f "$err"
  if ((rc != 0)); then
    [[ -n "$EVIDENCE_WHY" ]] || EVIDENCE_WHY="llama_gpu_evidence.py $1 failed (exit $rc)"
    return 1
  fi
  EVIDENCE_SUMMARY=${out%%$'\n'*}
  if [[ "$out" == *$'\n'* ]]; then
    EVIDENCE_RESULTS=${out#*$'\n'}
  fi
  return 0
}

# llama_nommap_flags: read llama-bench --help on stdin and print, one a line, the switch that
# loads the model without memory mapping: -mmp 0 on builds that list -mmp, -lm none
# (--load-mode) on newer ones that renamed it; nothing when neither is listed. Strix Halo
# owners benchmark with flash attention and without mmap (kyuz0's toolboxes README: "Always
# use flash attention (-fa 1) and no-mmap (--no-mmap) on Strix Halo to avoid crashes/slowdowns").
llama_nommap_flags() {
  local help
  help=$(cat)
  if grep -q -- '-mmp' <<<"$help"; then
    printf '%s\n' -mmp 0
  elif grep -q -- '--load-mode' <<<"$help"; then
    printf '%s\n' -lm none
  fi
}

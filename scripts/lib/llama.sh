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

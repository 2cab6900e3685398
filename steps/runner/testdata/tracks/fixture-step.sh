#!/usr/bin/env bash
# Fake step for the CLI tests (no GPU, no containers here): behaves as the
# environment asks, so one tree serves every scenario.
#   FX_FAIL="vllm aiter"   steps that fail, printing FX_FAIL_TEXT first
#   FX_WAIT=vllm           step that starts processes which ignore SIGTERM
#                          (one in its own session), writes their pids to
#                          $HALOFORGE_RUN_DIR/pids, touches .../ready and
#                          waits, until $HALOFORGE_CACHE_DIR/open exists
#   FX_NOT_VERIFIED=REASON step verify writes its outcome to
#                          $HALOFORGE_RESULT_FILE: what it proved, and that
#                          REASON kept it from verifying the rest
set -Eeuo pipefail
step="${HALOFORGE_STEP:?run by haloforge}"
echo "${step}: GPU_TARGET=${GPU_TARGET:-} resume=${HALOFORGE_RESUME:-0}"
if [[ "${HALOFORGE_DRY_RUN:-}" == 1 ]]; then
  echo "[dry-run] build ${step} in ${HALOFORGE_CACHE_DIR}"
  exit 0
fi
echo "building ${step}" >&2
if [[ " ${FX_FAIL:-} " == *" ${step} "* ]]; then
  echo "${FX_FAIL_TEXT:-error: ${step} failed}"
  exit 1
fi
if [[ "${FX_WAIT:-}" == "${step}" && ! -e "${HALOFORGE_CACHE_DIR}/open" ]]; then
  pids="${HALOFORGE_RUN_DIR}/pids"
  echo "${PPID}" >"${pids}"
  bash -c 'trap "" TERM HUP; while :; do sleep 0.2; done' &
  echo "$!" >>"${pids}"
  setsid bash -c 'trap "" TERM HUP; exec sleep 600' </dev/null >/dev/null 2>&1 &
  echo "$!" >>"${pids}"
  trap '' TERM
  echo "waiting" # before ready: the test reads it from the log right after
  touch "${HALOFORGE_RUN_DIR}/ready"
  wait
fi
if [[ "${step}" == verify && -n "${FX_NOT_VERIFIED:-}" ]]; then
  printf 'verified\t%s\n' "torch imports and sees gfx1151" >>"${HALOFORGE_RESULT_FILE}"
  printf 'not-verified\t%s\n' "${FX_NOT_VERIFIED}" >>"${HALOFORGE_RESULT_FILE}"
  echo "verify: not verified: ${FX_NOT_VERIFIED}"
fi
echo "${step} done"

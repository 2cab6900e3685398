#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ollama, step "verify": the API answers, and Ollama's own log says it found the GPU through
# the engine of OLLAMA_BACKEND (its "inference compute" line with library=ROCm, or Vulkan). What it proved, or why not, goes to the
# runner's report (hf_verified / hf_not_verified), like every verify step.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
hf_init "$@"

name=haloforge-ollama
require_env OLLAMA_PORT
case ${OLLAMA_BACKEND:-rocm} in
  rocm) library=ROCm ;;
  vulkan) library=Vulkan ;;
  *) die "OLLAMA_BACKEND must be rocm or vulkan, got '$OLLAMA_BACKEND'" 2 ;;
esac
url=http://127.0.0.1:$OLLAMA_PORT/api/version
eng=$(engine)
log_step "Ask $url"
if is_dry_run; then
  run curl -fsS --max-time 5 "$url"
  run "$eng" logs "$name"
  exit 0
fi
require curl
hf_verify_begin
# not_verified REASON: record the reason and fail the step.
not_verified() {
  hf_not_verified "$1"
  die "$1"
}
version=''
for _ in $(seq 1 30); do
  version=$(curl -fsS --max-time 5 "$url" 2>/dev/null) && break
  sleep 1
done
[[ -n "$version" ]] || not_verified "Ollama does not answer on $url after 30 s; see: $eng logs $name"
log_ok "Ollama answers: $version"
# /api/version answers {"version":"0.32.15"}.
version=$(sed -n 's/.*"version" *: *"\([^"]*\)".*/\1/p' <<<"$version")

log_step "Look for the GPU in Ollama's log"
logs=$("$eng" logs "$name" 2>&1 || true)
if gpu_line=$(ollama_gpu_line "$library" <<<"$logs"); then
  log_ok "Ollama found the GPU: $gpu_line"
  # The fields after the message: library=ROCm compute=gfx1151 … name=… total=… available=…
  hf_verified "Ollama ${version:-?} runs on the $library GPU: ${gpu_line#*msg=\"inference compute\" }"
else
  grep -iE 'no compatible GPUs|unable to open /dev/kfd|rocm.*(error|unsupported)|vulkan|dropping integrated GPU' <<<"$logs" | tail -n 5 >&2 || true
  not_verified "Ollama runs on the CPU only: no $library GPU in its log (see: $eng logs $name)"
fi
hf_verify_end

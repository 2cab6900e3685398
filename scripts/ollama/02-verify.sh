#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ollama, step "verify": the API answers, and Ollama's own log says it found the ROCm GPU.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
hf_init "$@"

name=haloforge-ollama
require_env OLLAMA_PORT
url=http://127.0.0.1:$OLLAMA_PORT/api/version
eng=$(engine)
log_step "Ask $url"
if is_dry_run; then
  run curl -fsS --max-time 5 "$url"
  run "$eng" logs "$name"
  exit 0
fi
require curl
version=''
for _ in $(seq 1 30); do
  version=$(curl -fsS --max-time 5 "$url" 2>/dev/null) && break
  sleep 1
done
[[ -n "$version" ]] || die "Ollama does not answer on $url after 30 s; see: $eng logs $name"
log_ok "Ollama answers: $version"

log_step "Look for the GPU in Ollama's log"
logs=$("$eng" logs "$name" 2>&1 || true)
if gpu_line=$(ollama_gpu_line <<<"$logs"); then
  log_ok "Ollama found the GPU: $gpu_line"
else
  grep -iE 'no compatible GPUs|unable to open /dev/kfd|rocm.*(error|unsupported)' <<<"$logs" | tail -n 5 >&2 || true
  die "Ollama runs on the CPU only: no ROCm GPU in its log (see: $eng logs $name)"
fi

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# run_ollama.sh (ollama, step "serve"): start the official Ollama container as
# "haloforge-ollama" with the engine of OLLAMA_BACKEND (rocm: the -rocm image with /dev/kfd
# and /dev/dri; vulkan: the plain image, /dev/dri, OLLAMA_VULKAN=1 and OLLAMA_IGPU_ENABLE=1,
# lib/container.sh ollama_engine), and the memory settings Ollama really reads.
#
# The seed asked for OLLAMA_GPU_MEMORY=96GB. Ollama has no such variable (never merged;
# envconfig/config.go is the list of what it reads), so setting it does nothing. On Strix
# Halo the GPU's memory is the kernel's GTT pool: size it on the host with
# ttm.pages_limit=<GiB x 262144> (96 GiB = 25165824), and tell Ollama how much of it to
# leave alone with OLLAMA_GPU_OVERHEAD (bytes). See scripts/ollama/README.md.
#
# Passed through when set in your environment (all read by Ollama's envconfig):
#   OLLAMA_CONTEXT_LENGTH OLLAMA_FLASH_ATTENTION OLLAMA_KV_CACHE_TYPE OLLAMA_KEEP_ALIVE
#   OLLAMA_MAX_LOADED_MODELS OLLAMA_NUM_PARALLEL OLLAMA_LOAD_TIMEOUT OLLAMA_DEBUG
# Models live in the podman volume "haloforge-ollama" and survive a re-run.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
hf_init "$@"

name=haloforge-ollama
require_env OLLAMA_PORT
ollama_engine
: "${OLLAMA_GPU_OVERHEAD:=0}"
[[ "$OLLAMA_GPU_OVERHEAD" =~ ^[0-9]+$ ]] || die "OLLAMA_GPU_OVERHEAD is a number of bytes, got '$OLLAMA_GPU_OVERHEAD'" 2
if [[ -n "${OLLAMA_GPU_MEMORY:-}" ]]; then
  log_warn "OLLAMA_GPU_MEMORY=$OLLAMA_GPU_MEMORY is ignored: Ollama has no such variable. Size GTT with ttm.pages_limit and reserve with OLLAMA_GPU_OVERHEAD instead."
fi
# gfx1151 is one of Ollama's built-in ROCm targets: an override would only hurt.
if [[ -n "${HSA_OVERRIDE_GFX_VERSION:-}" ]]; then
  log_warn "HSA_OVERRIDE_GFX_VERSION=$HSA_OVERRIDE_GFX_VERSION is set in your environment; it is not passed to Ollama (gfx1151 is built in)"
fi

report_gtt

env_flags=(-e "OLLAMA_GPU_OVERHEAD=$OLLAMA_GPU_OVERHEAD")
for kv in "${OLLAMA_ENGINE_ENV[@]}"; do env_flags+=(-e "$kv"); done
for v in OLLAMA_CONTEXT_LENGTH OLLAMA_FLASH_ATTENTION OLLAMA_KV_CACHE_TYPE OLLAMA_KEEP_ALIVE \
  OLLAMA_MAX_LOADED_MODELS OLLAMA_NUM_PARALLEL OLLAMA_LOAD_TIMEOUT OLLAMA_DEBUG; do
  [[ -n "${!v:-}" ]] && env_flags+=(-e "$v=${!v}")
done

eng=$(engine)
log_step "Start $name ($OLLAMA_RUN_IMAGE, ${OLLAMA_BACKEND:-rocm}) on 127.0.0.1:$OLLAMA_PORT"
if ! is_dry_run && "$eng" container inspect "$name" >/dev/null 2>&1; then
  current=$("$eng" container inspect --format '{{.Config.Image}}' "$name" 2>/dev/null || true)
  running=$("$eng" container inspect --format '{{.State.Running}}' "$name" 2>/dev/null || true)
  engine_env=$("$eng" container inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$name" 2>/dev/null | grep -c '^OLLAMA_VULKAN=1$' || true)
  want_vulkan=0
  [[ "${OLLAMA_BACKEND:-rocm}" == vulkan ]] && want_vulkan=1
  if [[ "$running" == true ]] && same_image "$current" "$OLLAMA_RUN_IMAGE" && ((engine_env == want_vulkan)); then
    log_ok "$name already runs $OLLAMA_RUN_IMAGE; models are kept in the volume $name"
    exit 0
  fi
  # The container holds no data (models are in the volume): replacing it is safe.
  log_info "replacing $name (image ${current:-unknown}, running=${running:-unknown})"
  run "$eng" rm -f "$name"
fi
[[ "${OLLAMA_BACKEND:-rocm}" == rocm ]] && need_gpu_devices
run "$eng" run -d --name "$name" --restart unless-stopped "${OLLAMA_DEVICE_FLAGS[@]}" \
  -p "127.0.0.1:$OLLAMA_PORT:11434" -v "$name:/root/.ollama" \
  "${env_flags[@]}" "$OLLAMA_RUN_IMAGE"
is_dry_run || log_ok "Ollama runs: $eng exec -it $name ollama run <model>"

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# llamacpp-rocm, step "ladder": try each rung of ladder.tsv with a stall timeout, record
# every result in $HALOFORGE_STATE_DIR/llamacpp-rocm/ladder.json, and stop at the first one
# that loads the model and generates tokens on the GPU. First the image as shipped, then the
# prebuilt build step "pull" checked, then the 2025 workarounds. llama-bench runs with -dev
# ROCm0 -o jsonl -v: its rows must carry device evidence, not just "ROCm" among the backends
# compiled in (lib/llama_gpu_evidence.py), and the -v lines ("offloaded N/M layers to GPU")
# must not say the layers stayed on the CPU. Every rung loads the model without mmap (the
# switch its llama-bench's --help names: lib/llama.sh llama_nommap_flags), as Strix Halo owners
# run it: with mmap a slow load of a large GGUF is taken for a hang. After that, rung_answers
# (ladder.sh) checks what the rung computes: a rung works only when a numerical check ran
# and passed (test-backend-ops against the CPU backend, and its answers against haloforge's
# CPU reference of the same GGUF); a rung that answers wrong is recorded as wrong-output and
# the ladder goes on.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
# shellcheck source=../lib/llama.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/llama.sh"
# shellcheck source=./ladder.sh
. "$(dirname "${BASH_SOURCE[0]}")/ladder.sh"
hf_init "$@"

require_env LLAMACPP_ROCM_IMAGE LLAMACPP_ROCM_NIGHTLY_IMAGE LLAMACPP_ROCM_PREBUILT_SHA256 LLAMA_STALL_TIMEOUT
[[ "$LLAMA_STALL_TIMEOUT" =~ ^[1-9][0-9]*$ ]] || die "LLAMA_STALL_TIMEOUT must be seconds, got '$LLAMA_STALL_TIMEOUT'" 2
model=${LLAMA_MODEL:-}
if [[ -z "$model" ]]; then
  is_dry_run || die "the ladder needs a GGUF model: haloforge build --track llamacpp-rocm --set LLAMA_MODEL=/path/to/model.gguf"
  model=/path/to/model.gguf
  log_warn "LLAMA_MODEL is not set; the dry run shows $model"
fi
[[ -f "$model" ]] || is_dry_run || die "LLAMA_MODEL=$model: no such file"
model_dir=$(dirname "$model")
[[ -d "$model_dir" ]] && model_dir=$(cd "$model_dir" && pwd)
is_dry_run || require python3

log_warn "experimental: each rung gets ${LLAMA_STALL_TIMEOUT}s of silence after a hang-prone line before it counts as hung"
need_gpu_devices
mapfile -t rungs < <(ladder_rungs "$HF_SCRIPT_DIR/ladder.tsv")
mapfile -t gpu < <(gpu_flags)
eng=$(engine)
dir=$(state_dir_for llamacpp-rocm)
tsv=$dir/ladder.tsv json=$dir/ladder.json
is_dry_run || {
  mkdir -p "$HALOFORGE_RUN_DIR"
  : >"$tsv"
}

winner='' n=0
for rung in "${rungs[@]}"; do
  n=$((n + 1))
  IFS=$'\t' read -r id image_pin envs flags host_check runs why <<<"$rung"
  image=${!image_pin:?pin $image_pin of rung $id is not set}
  what=$image bench=llama-bench
  log_step "Rung $n/${#rungs[@]} $id: $why"
  if ! have=$(host_check_ok "$host_check"); then
    detail="needs host change: ${host_check%%=*} is $have, the rung needs ${host_check#*=}; run: $(host_change_hint "$host_check")"
    log_warn "$detail"
    is_dry_run || ladder_record "$tsv" "$id" skipped 0 "$image" "$detail" - -
    continue
  fi
  opts=("${gpu[@]}") RUNG_BIN=''
  if [[ "$runs" == prebuilt ]]; then
    pre=$(prebuilt_dir)
    if ! is_dry_run && [[ ! -x "$pre/llama-bench" ]]; then
      detail="the prebuilt build is not unpacked at $pre: run the pull step (haloforge build --track llamacpp-rocm --from pull)"
      log_warn "$detail"
      ladder_record "$tsv" "$id" skipped 0 "$image" "$detail" - -
      continue
    fi
    # The build's own libraries first: it may carry a newer ROCm than the image's.
    opts+=(-v "$pre:/opt/llamacpp-prebuilt:ro,z" -e LD_LIBRARY_PATH=/opt/llamacpp-prebuilt)
    what="$image + $(basename "$LLAMACPP_ROCM_PREBUILT_URL")" bench=/opt/llamacpp-prebuilt/llama-bench
    RUNG_BIN=/opt/llamacpp-prebuilt/
  fi
  if [[ "$envs" != - ]]; then
    read -r -a kvs <<<"$envs"
    for kv in "${kvs[@]}"; do opts+=(-e "$kv"); done
  fi
  opts+=(-v "$model_dir:/models:ro,z")
  # What rung_answers runs its checks in: the rung's container, and its servers on the host's
  # network so that haloforge verify reaches them on 127.0.0.1.
  RUNG_RUN=("$eng" run --rm "${opts[@]}" "$image")
  RUNG_SERVER=("$eng" run --rm --name '{name}' --network host "${opts[@]}" "$image")
  nommap=(-lm none)
  is_dry_run || mapfile -t nommap < <("${RUNG_RUN[@]}" "$bench" --help 2>&1 | llama_nommap_flags || true)
  cmd=("$eng" run --rm --name "haloforge-ladder-$id" "${opts[@]}" "$image"
    "$bench" -m "/models/$(basename "$model")" -ngl 99 -p 64 -n 16 -r 1 -v -o jsonl -dev ROCm0 "${nommap[@]}")
  if [[ "$flags" != - ]]; then
    read -r -a extra <<<"$flags"
    cmd+=("${extra[@]}")
  fi
  if is_dry_run; then
    run "${cmd[@]}"
    run "${RUNG_RUN[@]}" test-backend-ops -o MUL_MAT -b ROCm0
    LLAMA_SERVER_PREFIX=("${RUNG_SERVER[@]}") LLAMA_SERVER_BIN=${RUNG_BIN}llama-server
    llama_answers "$model" "/models/$(basename "$model")" -ngl 99 -fa on --device ROCm0 --no-mmap
    LLAMA_SERVER_PREFIX=() LLAMA_SERVER_BIN=''
    continue
  fi
  log=$HALOFORGE_RUN_DIR/ladder-$id.log
  : >"$log"
  start=$SECONDS wrc=0
  "$eng" rm -f "haloforge-ladder-$id" >/dev/null 2>&1 || true
  run_watched "$LLAMA_STALL_TIMEOUT" "$log" "haloforge-ladder-$id" "${cmd[@]}" || wrc=$?
  secs=$((SECONDS - start))
  evidence=0
  llama_gpu_evidence bench "$log" --backend ROCm --device ROCm0 && evidence=1
  if ((wrc == 3)); then
    status=hung detail=$STALL_REASON
  elif ((WATCH_EXIT != 0)); then
    # llama-bench's own "error: …" line (e.g. "invalid device: ROCm0"), else the last line.
    why=$(grep -m1 '^error: ' "$log" || grep -v '^[[:space:]]*$' "$log" | tail -n 1)
    status=failed detail="exit $WATCH_EXIT: $why"
  elif ((evidence)) && bench_generated "$EVIDENCE_RESULTS"; then
    detail=$EVIDENCE_SUMMARY
    log_info "$id generates on ROCm0: $detail; now what it computes"
    rung_answers "$id" "$log"
    case $ANSWERS in
      verified) status=success ;;
      wrong) status=wrong-output detail="$detail; but $ANSWERS_DETAIL" ;;
      *) status=unverified detail="$detail; but $ANSWERS_DETAIL" ;;
    esac
  elif grep -q '"avg_ts"' "$log"; then
    status=failed detail="not on the GPU: $EVIDENCE_WHY"
  else
    status=failed detail="the model ran but generated no tokens"
  fi
  answers=-
  [[ "$status" == success || "$status" == wrong-output || "$status" == unverified ]] && answers="$ANSWERS: $ANSWERS_DETAIL"
  ladder_record "$tsv" "$id" "$status" "$secs" "$what" "$detail" "$answers" "$log"
  ladder_json "$tsv" | write_file "$json"
  if [[ "$status" == success ]]; then
    log_ok "$id works: $detail"
    log_info "answers: $answers"
    winner=$id
    break
  fi
  log_warn "$id: $status: $detail"
done

is_dry_run && exit 0
ladder_json "$tsv" | write_file "$json"
if [[ -n "$winner" ]]; then
  log_ok "strategy '$winner' loads and generates on this box; every attempt is in $json"
  exit 0
fi
log_error "no rung loaded the model and generated right tokens on this box (every attempt: $json)"
log_info "use the llamacpp-vulkan track (RADV), which does not touch ROCm, and see the failing rung's log"
exit 1

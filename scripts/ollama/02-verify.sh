#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ollama, step "verify": the API answers, Ollama's own log says it found the GPU through the
# engine of OLLAMA_BACKEND (its "inference compute" line with library=ROCm, or Vulkan), and then
# a model really runs there: that line comes from GPU discovery, before anything is compiled or
# run on the GPU, so alone it proves nothing of a model. The model is LLAMA_MODEL (a GGUF: pushed
# as a blob, /api/blobs, and made the model "haloforge-verify", /api/create) or, without it, the
# smallest model already pulled (/api/tags). It must generate (/api/generate, 8 tokens, greedy),
# sit in GPU memory (/api/ps: size_vram > 0; 0 is a CPU fallback) and answer right (haloforge
# verify against Ollama's OpenAI-compatible API: the known answers). What it proved, or why not,
# goes to the runner's report (hf_verified / hf_not_verified), like every verify step.
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
api=http://127.0.0.1:$OLLAMA_PORT
if is_dry_run; then
  run curl -fsS --max-time 5 "$url"
  run "$eng" logs "$name"
  if [[ -n ${LLAMA_MODEL:-} ]]; then
    run curl -fsS -T "$LLAMA_MODEL" -X POST "$api/api/blobs/sha256:SHA256"
    run curl -fsS "$api/api/create" -d '{"model": "haloforge-verify", "files": {"'"$(basename "$LLAMA_MODEL")"'": "sha256:SHA256"}, "stream": false}'
  else
    run curl -fsS "$api/api/tags"
  fi
  run curl -fsS "$api/api/generate" -d '{"model": "MODEL", "prompt": "The capital of France is", "stream": false, "options": {"num_predict": 8, "temperature": 0}}'
  run curl -fsS "$api/api/ps"
  run "${HALOFORGE_BIN:-haloforge}" verify --url "$api" --model MODEL --track "${HALOFORGE_TRACK:-ollama}"
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
  hf_verified "Ollama ${version:-?} found the $library GPU: ${gpu_line#*msg=\"inference compute\" }"
else
  grep -iE 'no compatible GPUs|unable to open /dev/kfd|rocm.*(error|unsupported)|vulkan|dropping integrated GPU' <<<"$logs" | tail -n 5 >&2 || true
  not_verified "Ollama runs on the CPU only: no $library GPU in its log (see: $eng logs $name)"
fi

# json_get FIELD: a field of the JSON object on stdin, printed on one line, at most 300
# characters, ASCII only (the answers are Ollama's: no control or escape reaches the log);
# fails when the field is not there or stdin is no JSON object.
json_get() {
  python3 -c 'import json, sys
v = json.load(sys.stdin).get(sys.argv[1])
if v is None:
    sys.exit(1)
print("".join(c if " " <= c <= "~" else "?" for c in str(v))[:300])' "$1"
}

# printable: what a failed request printed (curl's error, or an answer that is no JSON
# object), as json_get prints a field.
printable() { LC_ALL=C tr -c ' -~' '?' | head -c 300; }

log_step "A model to run"
if [[ -n ${LLAMA_MODEL:-} ]]; then
  [[ -f $LLAMA_MODEL ]] || not_verified "LLAMA_MODEL=$LLAMA_MODEL is no file"
  sum=$(sha256sum "$LLAMA_MODEL" | cut -d' ' -f1)
  if ! curl -fsS --max-time 5 -I "$api/api/blobs/sha256:$sum" >/dev/null 2>&1; then
    log_info "pushing $LLAMA_MODEL to Ollama (its blob sha256:$sum)"
    curl -fsS --max-time 3600 -T "$LLAMA_MODEL" -X POST "$api/api/blobs/sha256:$sum" >/dev/null \
      || not_verified "Ollama did not take $LLAMA_MODEL as a blob (POST /api/blobs/sha256:$sum)"
  fi
  body=$(python3 -c 'import json, sys; print(json.dumps({"model": "haloforge-verify", "files": {sys.argv[1]: "sha256:" + sys.argv[2]}, "stream": False}))' \
    "$(basename "$LLAMA_MODEL")" "$sum")
  created=$(curl -sS --max-time 600 "$api/api/create" -d "$body" 2>&1) || true
  [[ $(json_get status <<<"$created" 2>/dev/null) == success ]] \
    || not_verified "Ollama could not make a model of $LLAMA_MODEL: $(json_get error <<<"$created" 2>/dev/null || printable <<<"$created")"
  model=haloforge-verify
  log_ok "$LLAMA_MODEL is the model haloforge-verify"
else
  model=$(curl -fsS --max-time 10 "$api/api/tags" | python3 -c 'import json, re, sys
ms = [m for m in json.load(sys.stdin).get("models") or [] if re.fullmatch(r"[A-Za-z0-9._:/-]{1,200}", m.get("name", ""))]
ms.sort(key=lambda m: m.get("size") or 0)
print(ms[0]["name"] if ms else "")') || model=''
  [[ -n $model ]] || not_verified "Ollama has no model to run, so nothing ran on the GPU: pull one ($eng exec $name ollama pull MODEL) or set LLAMA_MODEL=FILE.gguf, and run this step again"
  log_ok "the smallest model Ollama has: $model"
fi

log_step "Generate with $model"
body=$(python3 -c 'import json, sys; print(json.dumps({"model": sys.argv[1], "prompt": "The capital of France is", "stream": False, "options": {"num_predict": 8, "temperature": 0}}))' "$model")
gen=$(curl -sS --max-time "${OLLAMA_VERIFY_TIMEOUT:-900}" "$api/api/generate" -d "$body" 2>&1) || true
tokens=$(json_get eval_count <<<"$gen" 2>/dev/null) || tokens=''
if [[ $(json_get 'done' <<<"$gen" 2>/dev/null) != True || ! $tokens =~ ^[1-9][0-9]*$ ]]; then
  not_verified "$model did not generate on Ollama: $(json_get error <<<"$gen" 2>/dev/null || printable <<<"$gen") (see: $eng logs $name)"
fi
log_ok "$model generated $tokens tokens: $(json_get response <<<"$gen")"

log_step "Where the model sits: /api/ps"
vram=$(curl -fsS --max-time 10 "$api/api/ps" | python3 -c 'import json, sys
for m in json.load(sys.stdin).get("models") or []:
    if sys.argv[1] in (m.get("name"), m.get("model")) or m.get("name", "").startswith(sys.argv[1] + ":"):
        print(int(m.get("size_vram") or 0), int(m.get("size") or 0)); break' "$model") || vram=''
read -r size_vram size <<<"$vram"
[[ -n ${size_vram:-} ]] || not_verified "$model generated, but /api/ps does not list it as loaded"
((size_vram > 0)) || not_verified "$model ran on the CPU: /api/ps says 0 of its $size bytes are in GPU memory (see: $eng logs $name)"
hf_verified "Ollama ${version:-?} ran $model on the $library GPU: $tokens tokens generated, $size_vram of its $size bytes in GPU memory (/api/ps)"

log_step "Answers: haloforge verify against Ollama's OpenAI-compatible API"
if ! hf=$(hf_bin); then
  hf_not_verified "answers not checked: no haloforge binary to check them with (HALOFORGE_BIN='${HALOFORGE_BIN:-}'; the runner sets it)"
else
  mkdir -p "$HALOFORGE_RUN_DIR"
  out=$HALOFORGE_RUN_DIR/answers.txt
  code=0
  "$hf" verify --state-dir "$HALOFORGE_STATE_DIR" --url "$api" --model "$model" --track "${HALOFORGE_TRACK:-ollama}" >"$out" 2>&1 || code=$?
  cat "$out"
  line=$(grep -E '^(right|WRONG OUTPUT|not verified): ' "$out" | tail -n1 || true)
  case $code in
    0) hf_verified "answers of $model: $line" ;;
    1)
      [[ $line == WRONG* ]] && not_verified "answers of $model: $line"
      hf_not_verified "answers of $model: $line"
      ;;
    *) hf_not_verified "answers of $model: not checked: haloforge verify exit $code: $(tail -n1 "$out")" ;;
  esac
fi
hf_verify_end

#!/usr/bin/env bats
# Tests of the image tracks' shared helpers (lib/container.sh) and of the vllm-image,
# nightly-spoof, locked-spoof and ollama scripts. No GPU, engine or registry here: engine
# calls are checked in dry runs, or against a stand-in engine where a reply is needed.
# shellcheck disable=SC2016,SC2030,SC2031

setup() {
  S=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
  T=$BATS_TEST_TMPDIR
  export NO_COLOR=1 HALOFORGE_STATE_DIR=$T/state
  unset HALOFORGE_DRY_RUN HALOFORGE_CONTAINER_ENGINE OLLAMA_GPU_MEMORY VLLM_GPU_MEMORY_UTILIZATION
}

load answers_standin

ct() { bash -c ". '$S/lib/common.sh'; . '$S/lib/container.sh'; $1"; }

@test "spoofed_target: HSA_OVERRIDE_GFX_VERSION to the gfx name the runtime reports" {
  run ct 'spoofed_target 11.0.0; spoofed_target 8.0.3; spoofed_target 11.5.1; spoofed_target 9.0.10'
  [ "$output" = "$(printf 'gfx1100\ngfx803\ngfx1151\ngfx90a')" ]
  run ct 'spoofed_target 11.0'
  [ "$status" -ne 0 ]
  [[ "$output" == *"must look like 11.0.0"* ]]
}

@test "gpu_flags: podman keeps the caller's groups, docker gets numeric groups, both unconfined" {
  run ct 'HALOFORGE_CONTAINER_ENGINE=podman gpu_flags | paste -sd" "'
  [ "$output" = "--device /dev/kfd --device /dev/dri --group-add keep-groups --security-opt seccomp=unconfined" ]
  run ct 'HALOFORGE_CONTAINER_ENGINE=docker gpu_flags | paste -sd" "'
  [[ "$output" == "--device /dev/kfd --device /dev/dri "*"--security-opt seccomp=unconfined" ]]
  [[ "$output" != *keep-groups* ]]
}

@test "need_gpu_devices stops a real run without /dev/kfd, with the reason" {
  [ -e /dev/kfd ] && skip "this machine has a GPU"
  run ct 'need_gpu_devices'
  [ "$status" -eq 1 ]
  [[ "$output" == *"missing on this host: /dev/kfd"*"no ROCm-capable device is detected"* ]]
  run ct 'HALOFORGE_ALLOW_NO_GPU=1 need_gpu_devices'
  [ "$status" -eq 0 ]
}

@test "the launcher: pinned image, devices, host IPC, seccomp, memory limit" {
  run bash "$S/vllm-image/01-write-launcher.sh"
  [ "$status" -eq 0 ]
  launcher=$T/state/vllm-image/start-vllm.sh
  [ -x "$launcher" ]
  run env START_VLLM_DRY_RUN=1 HOME="$T" "$launcher" Qwen/Qwen3-8B --max-model-len 8192
  [ "$status" -eq 0 ]
  image=$(sed -n 's/^VLLM_IMAGE=//p' "$S/../versions.env")
  [[ "$output" == *"run --rm -it --device /dev/kfd --device /dev/dri --group-add keep-groups --security-opt seccomp=unconfined --ipc=host -p 8000:8000 "* ]]
  [[ "$output" == *" --entrypoint vllm $image serve Qwen/Qwen3-8B --host 0.0.0.0 --port 8000 --gpu-memory-utilization 0.85 --max-model-len 8192"* ]]
}

@test "vLLM's own image (entrypoint vllm serve) runs the same way: the launcher sets the entrypoint" {
  VLLM_IMAGE=docker.io/vllm/vllm-openai-rocm:v0.19.0 bash "$S/vllm-image/01-write-launcher.sh"
  run env START_VLLM_DRY_RUN=1 HOME="$T" "$T/state/vllm-image/start-vllm.sh" Qwen/Qwen3-0.6B
  [ "$status" -eq 0 ]
  # `podman run IMAGE ARGS` would give vllm serve vllm serve …: the entrypoint is vllm, then serve MODEL
  [[ "$output" == *" --entrypoint vllm docker.io/vllm/vllm-openai-rocm:v0.19.0 serve Qwen/Qwen3-0.6B --host 0.0.0.0 --port 8000 "* ]]
  [[ "$output" != *"vllm serve"* ]]
  VLLM_IMAGE=docker.io/vllm/vllm-openai-rocm:v0.19.0 HALOFORGE_DRY_RUN=1 run bash "$S/vllm-image/02-verify.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"--entrypoint python3 docker.io/vllm/vllm-openai-rocm:v0.19.0 /haloforge/verify_torch.py"* ]]
  VLLM_IMAGE=docker.io/vllm/vllm-openai-rocm:v0.19.0 HALOFORGE_DRY_RUN=1 run bash "$S/vllm-image/00-pull-image.sh"
  [[ "$output" == *"pinned by tag: the digest it resolves to is recorded now, and haloforge pins lock writes it"* ]]
  [[ "$output" == *"[dry-run] podman pull docker.io/vllm/vllm-openai-rocm:v0.19.0"* ]]
}

@test "the launcher refuses more than 0.90 of the unified memory and explains why" {
  bash "$S/vllm-image/01-write-launcher.sh"
  run env START_VLLM_DRY_RUN=1 VLLM_GPU_MEMORY_UTILIZATION=0.95 "$T/state/vllm-image/start-vllm.sh" m
  [ "$status" -eq 2 ]
  [[ "$output" == *"up to 0.90"* ]]
  run env START_VLLM_DRY_RUN=1 HOME="$T" VLLM_GPU_MEMORY_UTILIZATION=0.9 "$T/state/vllm-image/start-vllm.sh" m
  [ "$status" -eq 0 ]
  run "$T/state/vllm-image/start-vllm.sh"
  [ "$status" -eq 2 ]
  [[ "$output" == *"Usage: start-vllm.sh MODEL"* ]]
}

@test "vllm-image verify checks torch, the target, vLLM's platform and its answers in the pinned image" {
  HALOFORGE_DRY_RUN=1 HALOFORGE_RUN_DIR=$T/run run bash "$S/vllm-image/02-verify.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"/haloforge/verify_vllm.py:ro,z -v "*"/haloforge/verify_answers.py:ro,z -e HALOFORGE_CHECK_VLLM=1 -e HALOFORGE_VERIFY_MODEL=Qwen/Qwen3-0.6B -e HF_TOKEN -v "*"/.cache/huggingface:/root/.cache/huggingface:z -v $T/run:$T/run:z -e HALOFORGE_EXPECT_ARCH=gfx1151 --entrypoint python3 docker.io/rocm/vllm:rocm10.0.0_"*" /haloforge/verify_torch.py"* ]]
  # W1: the answers, eager and compiled, each judged by haloforge verify
  [[ "$output" == *"--entrypoint python3 docker.io/rocm/vllm:rocm10.0.0_"*" /haloforge/verify_answers.py vllm eager MODEL_DIR $T/run/prompts.json $T/run/vllm-eager.json"* ]]
  [[ "$output" == *"/haloforge/verify_answers.py vllm compiled MODEL_DIR"* ]]
  [[ "$output" == *"verify --answers $T/run/vllm-compiled.json --track "* ]]
}

@test "run_nightly_spoof.sh shows the illegal-instruction risk before the spoofed command" {
  HALOFORGE_DRY_RUN=1 run bash "$S/nightly-spoof/run_nightly_spoof.sh" Qwen/Qwen3-8B
  [ "$status" -eq 0 ]
  risk=$(grep -n "Illegal instruction" <<<"$output" | head -n 1 | cut -d: -f1)
  cmd=$(grep -n "HSA_OVERRIDE_GFX_VERSION=11.0.0 .*docker.io/rocm/vllm-dev:nightly vllm serve Qwen/Qwen3-8B" <<<"$output" | cut -d: -f1)
  [ -n "$risk" ] && [ -n "$cmd" ] && [ "$risk" -lt "$cmd" ]
  [[ "$output" == *"proceeding (non-interactive)"* ]]
}

@test "run_nightly_spoof.sh asks on a terminal: no stops it, yes runs it" {
  command -v script >/dev/null || skip "needs util-linux script for a pty"
  mkdir -p "$T/bin"
  printf '#!/bin/sh\necho "$*" >>%s/calls\n' "$T" >"$T/bin/podman"
  chmod +x "$T/bin/podman"
  cmd="HALOFORGE_ALLOW_NO_GPU=1 HALOFORGE_CONTAINER_ENGINE=$T/bin/podman HALOFORGE_STATE_DIR=$T/state bash $S/nightly-spoof/run_nightly_spoof.sh some/model"
  run bash -c "printf 'n\\n' | script -qec '$cmd' /dev/null"
  [[ "$output" == *"[y/N]"* ]]
  [[ "$output" == *"stopped: nothing was run"* ]]
  [ ! -e "$T/calls" ]
  run bash -c "printf 'y\\n' | script -qec '$cmd' /dev/null"
  grep -q "run --rm -it .*-e HSA_OVERRIDE_GFX_VERSION=11.0.0 .*vllm serve some/model" "$T/calls"
}

@test "the locked spoof builds FROM the seed digest with the spoof version" {
  HALOFORGE_DRY_RUN=1 run bash "$S/locked-spoof/build_spoof_locked.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"--build-arg SPOOF_BASE_DIGEST=sha256:a92fa9cb915027468e85e147f4dd1c87f026d7974610280546a2a1f94a146889"* ]]
  [[ "$output" == *"--build-arg SPOOF_GFX_VERSION=11.0.0"* ]]
  [[ "$output" == *"-t localhost/haloforge/vllm-spoof-locked:a92fa9cb"* ]]
  SPOOF_BASE_DIGEST=sha256:short HALOFORGE_DRY_RUN=1 run bash "$S/locked-spoof/build_spoof_locked.sh"
  [ "$status" -eq 2 ]
}

@test "ollama_gpu_line: a ROCm line from Ollama's log passes, a CPU-only log fails" {
  gfx1151='time=2026-01-10T10:00:00.000Z level=INFO source=types.go:42 msg="inference compute" id=0 library=ROCm compute=gfx1151 libdirs=ollama,rocm_v7_2 name="Radeon 8060S Graphics" total="96.0 GiB" available="95.2 GiB"'
  old='time=2025-05-29T13:50:36.129-03:00 level=INFO source=types.go:130 msg="inference compute" id=0 library=rocm variant="" compute=gfx1102 driver=0.0 name=1002:7480 total="8.0 GiB" available="7.0 GiB"'
  cpu='time=2026-01-10T10:00:00.000Z level=INFO source=types.go:42 msg="inference compute" id=cpu library=cpu compute="" name=cpu total="123.0 GiB"'
  run ct "ollama_gpu_line <<<'$gfx1151'"
  [ "$status" -eq 0 ]
  [[ "$output" == *compute=gfx1151* ]]
  run ct "ollama_gpu_line <<<'$old'"
  [ "$status" -eq 0 ]
  run ct "ollama_gpu_line <<<'$cpu'"
  [ "$status" -eq 1 ]
}

@test "run_ollama.sh passes the real memory variable and warns about the one that does not exist" {
  export HALOFORGE_DRY_RUN=1 OLLAMA_GPU_MEMORY=96GB OLLAMA_GPU_OVERHEAD=8589934592 OLLAMA_KV_CACHE_TYPE=q8_0
  run bash "$S/ollama/run_ollama.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"OLLAMA_GPU_MEMORY=96GB is ignored: Ollama has no such variable"* ]]
  [[ "$output" == *"-e OLLAMA_GPU_OVERHEAD=8589934592 -e OLLAMA_KV_CACHE_TYPE=q8_0 docker.io/ollama/ollama:0.32.15-rocm"* ]]
  [[ "$output" == *"-p 127.0.0.1:11434:11434 -v haloforge-ollama:/root/.ollama"* ]]
  [[ "$output" != *"-e OLLAMA_GPU_MEMORY"* ]]
  [[ "$output" != *"-e HSA_OVERRIDE_GFX_VERSION"* ]]
  OLLAMA_GPU_OVERHEAD=8GB run bash "$S/ollama/run_ollama.sh"
  [ "$status" -eq 2 ]
}

@test "ollama_gpu_line LIBRARY: a Vulkan line passes for vulkan only; a ROCm line for rocm only" {
  vk='time=2026-11-29T10:00:00.000Z level=INFO source=types.go:42 msg="inference compute" id=0 filter_id="" library=Vulkan compute=0.0 name=Vulkan0 description="AMD Radeon Graphics (RADV GFX1151)" libdirs=ollama,vulkan type=iGPU total="96.0 GiB" available="95.2 GiB"'
  rocm='time=2026-01-10T10:00:00.000Z level=INFO source=types.go:42 msg="inference compute" id=0 library=ROCm compute=gfx1151 name="Radeon 8060S Graphics" total="96.0 GiB"'
  run ct "ollama_gpu_line Vulkan <<<'$vk'"
  [ "$status" -eq 0 ]
  [[ "$output" == *RADV* ]]
  run ct "ollama_gpu_line <<<'$vk'"
  [ "$status" -eq 1 ]
  run ct "ollama_gpu_line Vulkan <<<'$rocm'"
  [ "$status" -eq 1 ]
  run ct "ollama_gpu_line rocm <<<'$rocm'"
  [ "$status" -eq 0 ]
}

@test "ollama on Vulkan: the plain image, /dev/dri only, OLLAMA_VULKAN=1 and OLLAMA_IGPU_ENABLE=1" {
  export HALOFORGE_DRY_RUN=1 OLLAMA_BACKEND=vulkan HALOFORGE_CONTAINER_ENGINE=podman
  run bash "$S/ollama/run_ollama.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"[dry-run] podman run -d --name haloforge-ollama --restart unless-stopped --device /dev/dri --group-add keep-groups -p 127.0.0.1:11434:11434 -v haloforge-ollama:/root/.ollama -e OLLAMA_GPU_OVERHEAD=0 -e OLLAMA_VULKAN=1 -e OLLAMA_IGPU_ENABLE=1 docker.io/ollama/ollama:0.32.15"* ]]
  [[ "$output" != *"/dev/kfd"* ]]
  [[ "$output" != *"0.32.15-rocm"* ]]
  run bash "$S/ollama/00-pull-image.sh"
  [[ "$output" == *"[dry-run] podman pull docker.io/ollama/ollama:0.32.15"* ]]
  [[ "$output" != *"-rocm"* ]]
  # the default is ROCm, with both device nodes and no Vulkan variables
  unset OLLAMA_BACKEND
  run bash "$S/ollama/run_ollama.sh"
  [[ "$output" == *"--device /dev/kfd --device /dev/dri "*" docker.io/ollama/ollama:0.32.15-rocm"* ]]
  [[ "$output" != *OLLAMA_VULKAN* ]]
  OLLAMA_BACKEND=metal run bash "$S/ollama/run_ollama.sh"
  [ "$status" -eq 2 ]
  [[ "$output" == *"OLLAMA_BACKEND must be rocm or vulkan, got 'metal'"* ]]
}

# ollama_standins LOG: a stand-in of Ollama's API on the loopback (fake-ollama, a real HTTP
# server: no GPU or Ollama here) in the mode of $FX_OLLAMA: gpu (the model generates and
# /api/ps puts it in GPU memory), cpu (size_vram 0: a CPU fallback), empty (no model pulled),
# broken (/api/generate fails); a stand-in engine whose `logs` prints LOG; the answers
# check's stand-in haloforge (answers_standin.bash, FX_ANSWERS). Exports what 02-verify.sh reads.
ollama_standins() {
  mkdir -p "$T/bin"
  printf '%s\n' "$1" >"$T/ollama.log"
  printf '#!/bin/sh\n# stand-in engine for the bats tests: only `logs` answers\n[ "$1" = logs ] && cat "%s"\nexit 0\n' "$T/ollama.log" >"$T/bin/podman"
  chmod +x "$T/bin/podman"
  cat >"$T/fake-ollama.py" <<'PY'
import hashlib, http.server, json, os, sys
mode = os.environ.get("FX_OLLAMA", "gpu")
calls = open(sys.argv[1], "a", buffering=1)
blobs, models = set(), ({} if mode == "empty" else {"qwen3:8b": 5200000000, "qwen3:0.6b": 520000000})
class H(http.server.BaseHTTPRequestHandler):
    def reply(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code); self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
    def do_HEAD(self):
        calls.write("HEAD " + self.path + "\n")
        self.send_response(200 if self.path.split("/")[-1] in blobs else 404); self.end_headers()
    def do_GET(self):
        calls.write("GET " + self.path + "\n")
        if self.path == "/api/version": return self.reply(200, {"version": "0.32.15"})
        if self.path == "/api/tags": return self.reply(200, {"models": [{"name": n, "size": s} for n, s in models.items()]})
        if self.path == "/api/ps":
            return self.reply(200, {"models": [{"name": n, "model": n, "size": s, "size_vram": 0 if mode == "cpu" else s} for n, s in models.items() if n.startswith("loaded:") is False and n in loaded]})
        self.reply(404, {"error": "not found"})
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        calls.write("POST " + self.path + "\n")
        if self.path.startswith("/api/blobs/sha256:"):
            if "sha256:" + hashlib.sha256(body).hexdigest() != self.path.split("/")[-1]: return self.reply(400, {"error": "digest mismatch"})
            blobs.add(self.path.split("/")[-1]); return self.reply(201, {})
        req = json.loads(body)
        calls.write(json.dumps(req, sort_keys=True) + "\n")
        if self.path == "/api/create":
            if not all(d in blobs for d in req["files"].values()): return self.reply(400, {"error": "blob missing"})
            models[req["model"] + ":latest"] = 730624; return self.reply(200, {"status": "success"})
        if self.path == "/api/generate":
            name = req["model"] if ":" in req["model"] else req["model"] + ":latest"
            if mode == "broken" or name not in models: return self.reply(500, {"error": "llama runner process has terminated: \x1b[31mexit status 2"})
            loaded.add(name)
            return self.reply(200, {"model": req["model"], "response": " Paris, the city", "done": True, "eval_count": req["options"]["num_predict"]})
        self.reply(404, {"error": "not found"})
    def log_message(self, *a): pass
loaded = set()
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
  python3 -u "$T/fake-ollama.py" "$T/ollama-calls" >"$T/http.log" 2>&1 &
  echo $! >"$T/http.pid"
  local port=''
  for _ in $(seq 1 50); do
    port=$(head -n 1 "$T/http.log")
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ]
  stand_in_answers
  export OLLAMA_PORT=$port HALOFORGE_CONTAINER_ENGINE=$T/bin/podman HALOFORGE_RESULT_FILE=$T/results.tsv HALOFORGE_TRACK=ollama
}

teardown() {
  if [ -f "$T/http.pid" ]; then kill "$(cat "$T/http.pid")" 2>/dev/null || true; fi
}

rocm_line='time=2026-01-10T10:00:00.000Z level=INFO source=types.go:42 msg="inference compute" id=0 library=ROCm compute=gfx1151 libdirs=ollama,rocm_v7_2 name="Radeon 8060S Graphics" total="96.0 GiB" available="95.2 GiB"'

@test "ollama's verify: the GPU line, then the smallest pulled model generates in GPU memory and answers right" {
  ollama_standins "$rocm_line"
  run bash "$S/ollama/02-verify.sh"
  [ "$status" -eq 0 ]
  [ "$(cat "$T/results.tsv")" = "$(printf 'verified\tOllama 0.32.15 found the ROCm GPU: id=0 library=ROCm compute=gfx1151 libdirs=ollama,rocm_v7_2 name="Radeon 8060S Graphics" total="96.0 GiB" available="95.2 GiB"\nverified\tOllama 0.32.15 ran qwen3:0.6b on the ROCm GPU: 8 tokens generated, 520000000 of its 520000000 bytes in GPU memory (/api/ps)\nverified\tanswers of qwen3:0.6b: right: the 4 known answers are there and no answer is degenerate')" ]
  grep -q '"model": "qwen3:0.6b", "options": {"num_predict": 8, "temperature": 0}, "prompt": "The capital of France is", "stream": false' "$T/ollama-calls"
  grep -q -- "verify --state-dir $T/state --url http://127.0.0.1:$OLLAMA_PORT --model qwen3:0.6b --track ollama" "$T/hf-calls"
}

@test "ollama's verify from LLAMA_MODEL: the GGUF pushed as a blob, made haloforge-verify, run" {
  ollama_standins "$rocm_line"
  printf 'GGUF tiny weights' >"$T/tiny.gguf"
  sum=$(sha256sum "$T/tiny.gguf" | cut -d' ' -f1)
  LLAMA_MODEL=$T/tiny.gguf run bash "$S/ollama/02-verify.sh"
  [ "$status" -eq 0 ]
  grep -qx "POST /api/blobs/sha256:$sum" "$T/ollama-calls"
  grep -qF '{"files": {"tiny.gguf": "sha256:'"$sum"'"}, "model": "haloforge-verify", "stream": false}' "$T/ollama-calls"
  [[ "$(cat "$T/results.tsv")" == *"$(printf 'verified\t')Ollama 0.32.15 ran haloforge-verify on the ROCm GPU: 8 tokens generated, 730624 of its 730624 bytes in GPU memory"* ]]
  # a second run finds the blob there and does not push it again
  : >"$T/ollama-calls"
  LLAMA_MODEL=$T/tiny.gguf run bash "$S/ollama/02-verify.sh"
  [ "$status" -eq 0 ]
  run grep -q "POST /api/blobs" "$T/ollama-calls"
  [ "$status" -eq 1 ]
}

@test "ollama's verify fails a model that is not in GPU memory, one that does not generate, and no model at all, each with the reason" {
  FX_OLLAMA=cpu ollama_standins "$rocm_line"
  run bash "$S/ollama/02-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$(cat "$T/results.tsv")" == *"$(printf 'not-verified\t')qwen3:0.6b ran on the CPU: /api/ps says 0 of its 520000000 bytes are in GPU memory"* ]]
  kill "$(cat "$T/http.pid")"; rm "$T/results.tsv"
  FX_OLLAMA=broken ollama_standins "$rocm_line"
  run bash "$S/ollama/02-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$(cat "$T/results.tsv")" == *"$(printf 'not-verified\t')qwen3:0.6b did not generate on Ollama: llama runner process has terminated: ?[31mexit status 2"* ]]
  [[ "$output" != *$'\e[31m'* ]]
  kill "$(cat "$T/http.pid")"; rm "$T/results.tsv"
  FX_OLLAMA=empty ollama_standins "$rocm_line"
  run bash "$S/ollama/02-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$(cat "$T/results.tsv")" == *"$(printf 'not-verified\t')Ollama has no model to run, so nothing ran on the GPU: pull one ($T/bin/podman exec haloforge-ollama ollama pull MODEL) or set LLAMA_MODEL=FILE.gguf"* ]]
}

@test "ollama's verify: WRONG OUTPUT fails the step with the evidence" {
  ollama_standins "$rocm_line"
  FX_ANSWERS=wrong run bash "$S/ollama/02-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$(cat "$T/results.tsv")" == *"$(printf 'not-verified\t')answers of qwen3:0.6b: WRONG OUTPUT: prompt 1"* ]]
}

@test "N9: ollama on the CPU only is recorded as not verified, with the reason, and fails" {
  ollama_standins 'time=2026-01-10T10:00:00.000Z level=INFO source=types.go:42 msg="inference compute" id=cpu library=cpu compute="" name=cpu total="123.0 GiB"'
  run bash "$S/ollama/02-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$(cat "$T/results.tsv")" == "$(printf 'not-verified\t')Ollama runs on the CPU only: no ROCm GPU in its log"* ]]
}

@test "ollama's verify on Vulkan wants a Vulkan GPU line: a ROCm or CPU line is not it" {
  ollama_standins 'time=2026-11-29T10:00:00.000Z level=INFO source=types.go:42 msg="inference compute" id=0 library=Vulkan compute=0.0 name=Vulkan0 description="AMD Radeon Graphics (RADV GFX1151)" type=iGPU total="96.0 GiB" available="95.2 GiB"'
  OLLAMA_BACKEND=vulkan run bash "$S/ollama/02-verify.sh"
  [ "$status" -eq 0 ]
  [[ "$(cat "$T/results.tsv")" == "$(printf 'verified\t')Ollama 0.32.15 found the Vulkan GPU: id=0 library=Vulkan"*"ran qwen3:0.6b on the Vulkan GPU"* ]]
  printf '%s\n' 'time=2026-11-29T10:00:00.000Z level=INFO source=runner.go:445 msg="dropping integrated GPU; to enable, set OLLAMA_IGPU_ENABLE=1" id=0 library=Vulkan' \
    'time=2026-11-29T10:00:00.000Z level=INFO source=types.go:42 msg="inference compute" id=cpu library=cpu compute="" name=cpu total="123.0 GiB"' >"$T/ollama.log"
  rm "$T/results.tsv"
  OLLAMA_BACKEND=vulkan run bash "$S/ollama/02-verify.sh"
  [ "$status" -eq 1 ]
  [[ "$output" == *"dropping integrated GPU"* ]]
  [[ "$(cat "$T/results.tsv")" == *"$(printf 'not-verified\t')Ollama runs on the CPU only: no Vulkan GPU in its log"* ]]
}

@test "row 22: nightly-spoof says its rocm/vllm-dev image is deprecated upstream, and what replaces it" {
  HALOFORGE_DRY_RUN=1 run bash "$S/nightly-spoof/00-pull-image.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"rocm/vllm-dev is deprecated upstream (vllm/vllm-openai-rocm replaces it)"* ]]
  [[ "$output" == *"[dry-run] podman pull docker.io/rocm/vllm-dev:nightly"* ]]
  NIGHTLY_IMAGE=docker.io/example/other:nightly HALOFORGE_DRY_RUN=1 run bash "$S/nightly-spoof/00-pull-image.sh"
  [[ "$output" != *"deprecated upstream"* ]]
}

@test "row 22: vllm-image says its default rocm/vllm image is deprecated upstream too, and why it stays" {
  HALOFORGE_DRY_RUN=1 run bash "$S/vllm-image/00-pull-image.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *"rocm/vllm is deprecated upstream (vllm/vllm-openai-rocm replaces it): this image is pinned by the digest verified on a Radeon 8060S"* ]]
  VLLM_IMAGE=docker.io/vllm/vllm-openai-rocm:v0.31.0 HALOFORGE_DRY_RUN=1 run bash "$S/vllm-image/00-pull-image.sh"
  [[ "$output" != *"deprecated upstream"* ]]
}

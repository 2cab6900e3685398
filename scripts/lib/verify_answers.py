"""haloforge: answer `haloforge verify`'s prompt set without a server, for `verify --answers`.

  python verify_answers.py vllm eager|compiled MODEL_DIR PROMPTS OUT
  python verify_answers.py cpu MODEL_DIR PROMPTS OUT
  python verify_answers.py fits MODEL_DIR
  python verify_answers.py resolve MODEL

PROMPTS is `haloforge verify --prompts`'s JSON; OUT is written in the answers format
(`haloforge/verify-answers/v1`, docs/json.md), judged by `haloforge verify --answers OUT`: the
known answers and degenerate output, or position by position against a reference. The
judgement is haloforge's, in Go (steps/verify); this file only generates.

  vllm eager|compiled  vLLM's offline engine on the GPU, greedy, with the top-k logprobs of
                       every token: eager with enforce_eager=True (no torch.compile, no HIP
                       graphs), compiled without it, the path `vllm serve` takes by default.
                       Each pass runs in its own process, so each engine is torn down with it.
  cpu                  transformers on the CPU in float32, the same greedy decoding: the trusted
                       backend a vLLM track's reference is recorded from.
  fits                 exit 0 when the model's weights, in float32, fit in half the memory
                       available now (the cpu mode's need), else 1 with the sizes on stdout.
  resolve              print the local directory of MODEL (a directory, or a Hugging Face ID
                       downloaded into the Hugging Face cache); exit 3 with the reason on stdout
                       when it cannot be had here (offline, HF_HUB_OFFLINE=1, a gated model).

Token IDs are written, so haloforge compares tokens by ID where both sides have them (the
same tokenizer). A logprob that is not finite (NaN from broken kernels) is written as -10000,
the lowest haloforge reads: such a token is then as unlikely as can be, which a reference
comparison flags, and its text ("!!!!") is degenerate output in any case.
"""

import datetime
import json
import math
import os
import sys

ANSWERS_SCHEMA = "haloforge/verify-answers/v1"
FLOOR = -1e4


def finite(v):
    """A logprob haloforge reads: finite, at most 0 (rounding above 0 clipped), at least FLOOR."""
    v = float(v)
    if not math.isfinite(v):
        return FLOOR
    return max(FLOOR, min(v, 0.0))


def token_json(tid, text, logprob, top):
    """One token: its ID, its printable text and exact bytes, its logprob and alternatives."""
    return {
        "id": int(tid),
        "token": text,
        "bytes": list(text.encode("utf-8", "replace"))[:256],
        "logprob": finite(logprob),
        "top_logprobs": [
            {"id": int(i), "token": t, "bytes": list(t.encode("utf-8", "replace"))[:256], "logprob": finite(lp)}
            for i, t, lp in top
        ],
    }


def answer_json(prompt, tokens, text, finish):
    """One prompt's answer in the answers format."""
    return {
        "id": prompt["id"],
        "endpoint": prompt["endpoint"],
        "prompt": prompt["prompt"],
        "max_tokens": prompt["max_tokens"],
        "finish_reason": finish,
        "text": text,
        "tokens": tokens,
    }


def record_json(prompt_set, model, server, backend, answers):
    """The whole file."""
    return {
        "schema": ANSWERS_SCHEMA,
        "prompt_set": prompt_set["prompt_set"],
        "model": model,
        "server": server,
        "backend": backend,
        "recorded": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "haloforge": "",
        "top_k": prompt_set["top_k"],
        "prompts": answers,
    }


def write(path, record):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(record, f, ensure_ascii=True)
    os.replace(tmp, path)


def messages(prompt):
    """A chat prompt is the one user message."""
    return [{"role": "user", "content": prompt["prompt"]}]


def vllm_answers(mode, model_dir, prompt_set):
    """vLLM's offline engine, eager or compiled, greedy with top-k logprobs."""
    import vllm
    from vllm import LLM, SamplingParams

    util = float(os.environ.get("HALOFORGE_VERIFY_GPU_UTIL", "0.3"))
    llm = LLM(model=model_dir, max_model_len=1024, gpu_memory_utilization=util, enforce_eager=(mode == "eager"))
    k = prompt_set["top_k"]
    out = []
    for p in prompt_set["prompts"]:
        sp = SamplingParams(max_tokens=p["max_tokens"], temperature=0.0, top_p=1.0, logprobs=k, seed=prompt_set["seed"])
        if p["endpoint"] == "chat":
            res = llm.chat(messages(p), sp, use_tqdm=False)
        else:
            res = llm.generate([p["prompt"]], sp, use_tqdm=False)
        o = res[0].outputs[0]
        tokens = []
        for i, tid in enumerate(o.token_ids):
            lps = (o.logprobs or [])[i] if o.logprobs and i < len(o.logprobs) else {}
            ranked = sorted(lps.items(), key=lambda kv: -finite(kv[1].logprob))
            top = [(t, lp.decoded_token or "", lp.logprob) for t, lp in ranked[:k]]
            chosen = lps.get(tid)
            tokens.append(token_json(tid, (chosen.decoded_token if chosen else "") or "", chosen.logprob if chosen else FLOOR, top))
        out.append(answer_json(p, tokens, o.text, o.finish_reason or "length"))
    server = f"vLLM {getattr(vllm, '__version__', '?')} ({mode}, offline engine)"
    return server, out


def cpu_answers(model_dir, prompt_set):
    """transformers on the CPU in float32: the same greedy decoding, the top-k of the raw logits."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(prompt_set["seed"])
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32)
    model.eval()
    k = prompt_set["top_k"]
    eos = tok.eos_token_id
    out = []
    for p in prompt_set["prompts"]:
        if p["endpoint"] == "chat":
            ids = tok.apply_chat_template(messages(p), add_generation_prompt=True, return_tensors="pt")
        else:
            ids = tok(p["prompt"], return_tensors="pt").input_ids
        with torch.no_grad():
            gen = model.generate(ids, max_new_tokens=p["max_tokens"], do_sample=False, output_logits=True,
                                 return_dict_in_generate=True, pad_token_id=eos)
        new = gen.sequences[0, ids.shape[1]:].tolist()
        tokens = []
        for i, tid in enumerate(new):
            lp = torch.log_softmax(gen.logits[i][0].float(), dim=-1)
            vals, idx = torch.topk(lp, k)
            top = [(int(j), tok.decode([int(j)]), float(v)) for v, j in zip(vals.tolist(), idx.tolist())]
            tokens.append(token_json(tid, tok.decode([tid]), float(lp[tid]), top))
        stopped = bool(new) and new[-1] == eos and len(new) < p["max_tokens"]
        text = tok.decode(new, skip_special_tokens=True)
        out.append(answer_json(p, tokens, text, "stop" if stopped else "length"))
    return f"transformers {transformers.__version__} (CPU, float32)", out


def weights_bytes(model_dir):
    """The size of the model's weight files on disk."""
    total = 0
    for root, _, files in os.walk(model_dir):
        for n in files:
            if n.endswith((".safetensors", ".bin", ".pt")):
                total += os.path.getsize(os.path.join(root, n))
    return total


def mem_available():
    with open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def fits(model_dir):
    """float32 weights (twice a 16-bit checkpoint on disk) in half the memory available now."""
    need = 2 * weights_bytes(model_dir)
    have = mem_available()
    print(f"float32 weights about {need / 2**30:.1f} GiB, memory available {have / 2**30:.1f} GiB")
    return 0 < need <= have // 2


def resolve(model):
    """The local directory of model, or (None, reason)."""
    if os.path.isdir(model):
        return os.path.abspath(model), None
    try:
        from huggingface_hub import snapshot_download
    except Exception as exc:
        return None, f"huggingface_hub is not importable ({exc})"
    try:
        return snapshot_download(model), None
    except Exception as exc:  # offline, HF_HUB_OFFLINE=1, gated model, no disk
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return None, f"{model} could not be downloaded here ({type(exc).__name__}: {reason})"


def main(argv):
    if len(argv) == 2 and argv[0] == "resolve":
        path, why = resolve(argv[1])
        print(path or why)
        return 0 if path else 3
    if len(argv) >= 2 and argv[0] == "fits":
        return 0 if fits(argv[1]) else 1
    if len(argv) == 5 and argv[0] == "vllm" and argv[1] in ("eager", "compiled"):
        mode, model_dir, prompts, out = argv[1:]
        with open(prompts, encoding="utf-8") as f:
            ps = json.load(f)
        server, answers = vllm_answers(mode, model_dir, ps)
        write(out, record_json(ps, os.path.basename(model_dir.rstrip("/")), server, f"GPU (ROCm), {mode}", answers))
        return 0
    if len(argv) == 4 and argv[0] == "cpu":
        model_dir, prompts, out = argv[1:]
        with open(prompts, encoding="utf-8") as f:
            ps = json.load(f)
        server, answers = cpu_answers(model_dir, ps)
        write(out, record_json(ps, os.path.basename(model_dir.rstrip("/")), server, "CPU (transformers, float32)", answers))
        return 0
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

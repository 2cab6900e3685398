"""haloforge: prove that vLLM runs on ROCm here, and generates when a model is at hand.

  python verify_vllm.py
Environment:
  HALOFORGE_VERIFY_MODEL     a small public model (Hugging Face ID such as Qwen/Qwen3-0.6B,
                             or a local directory); empty: no generation, reported as such
  HALOFORGE_VERIFY_GPU_UTIL  vLLM's --gpu-memory-utilization for the check (default 0.3)
Checks: vLLM's current_platform is ROCm (vLLM detects ROCm only through amdsmi:
vllm/platforms/__init__.py rocm_platform_plugin; without it the platform is
UnspecifiedPlatform and `vllm serve` fails with "Failed to infer device type"), then a short
greedy generation. A model that cannot be downloaded (offline, HF_HUB_OFFLINE=1, no access)
is "not-verified" with the reason, never a pass. Prints verified:/not-verified:/FAIL: lines,
and a note: line when vLLM's device memory is the APU's BIOS carve-out (see memory_note).
"""

import os
import sys


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def check_platform():
    try:
        import vllm
        from vllm.platforms import current_platform
    except Exception as exc:
        fail(f"import vllm: {exc}")
    name = type(current_platform).__name__
    print(f"vllm {getattr(vllm, '__version__', '?')}: platform {name}", flush=True)
    if not current_platform.is_rocm():
        fail(f"vLLM runs on {name}, not ROCm: it detects ROCm only through amdsmi (is the SDK's amdsmi installed? python -c 'import amdsmi; amdsmi.amdsmi_init()'); `vllm serve` would fail with 'Failed to infer device type'")
    print(f"verified: vLLM {getattr(vllm, '__version__', '?')} detects the ROCm platform ({name})", flush=True)
    memory_note(current_platform)
    return vllm


GIB = 2**30


def memory_note(platform):
    """On an APU, amdsmi reports only the BIOS VRAM carve-out as the GPU's memory
    (ROCm/rocm-systems#8475, #8419: sysfs mem_info_vram_total, while KFD and HIP see the
    unified pool). vLLM's ROCm platform takes its device total from amdsmi, and vLLM picks
    its scheduling defaults from that total (64 GiB or more: max_num_seqs 512 and 4096
    batched tokens for the API server; less: 256 and 2048). KV-cache sizing uses torch's
    figures and is not affected. A note, not a failure: the flags restore the defaults."""
    try:
        import torch

        seen = int(platform.get_device_total_memory())
        hip = int(torch.cuda.get_device_properties(0).total_memory)
    except Exception as exc:  # an older vLLM, or a platform without the call
        print(f"(device memory not compared: {type(exc).__name__}: {exc})", flush=True)
        return
    if hip <= 0 or seen * 2 >= hip:
        return
    print(
        f"note: vLLM sees {seen / GIB:.1f} GiB of GPU memory (amdsmi counts only the BIOS VRAM carve-out on this APU), "
        f"HIP sees {hip / GIB:.1f} GiB: vLLM therefore picks its compact scheduling defaults (max_num_seqs 256, "
        f"2048 batched tokens for the server); to serve many requests at once pass --max-num-seqs 512 "
        f"--max-num-batched-tokens 4096. KV-cache sizing is not affected (ROCm/rocm-systems#8475)",
        flush=True,
    )


def model_path(model):
    """A local directory for model, or (None, reason) when it cannot be had here."""
    if os.path.isdir(model):
        return model, None
    try:
        from huggingface_hub import snapshot_download
    except Exception as exc:
        return None, f"huggingface_hub is not importable ({exc})"
    try:
        return snapshot_download(model), None
    except Exception as exc:  # offline, HF_HUB_OFFLINE=1, gated model, no disk
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return None, f"{model} could not be downloaded here ({type(exc).__name__}: {reason})"


def check_generation():
    model = os.environ.get("HALOFORGE_VERIFY_MODEL", "").strip()
    if not model:
        print("not-verified: vLLM generation: no model given (VERIFY_MODEL is empty); set it to a small public model such as Qwen/Qwen3-0.6B", flush=True)
        return
    path, why = model_path(model)
    if path is None:
        print(f"not-verified: vLLM generation with {model}: {why}", flush=True)
        return
    from vllm import LLM, SamplingParams

    util = float(os.environ.get("HALOFORGE_VERIFY_GPU_UTIL", "0.3"))
    try:
        llm = LLM(model=path, max_model_len=1024, gpu_memory_utilization=util, enforce_eager=True)
        out = llm.generate(["The capital of France is"], SamplingParams(max_tokens=8, temperature=0.0))
    except Exception as exc:
        fail(f"vLLM could not generate with {model}: {type(exc).__name__}: {exc}")
    tokens = list(out[0].outputs[0].token_ids)
    text = out[0].outputs[0].text
    if not tokens:
        fail(f"vLLM loaded {model} but generated no token")
    print(f"generated: {text!r}", flush=True)
    print(f"verified: vLLM generated {len(tokens)} tokens with {model} on the GPU", flush=True)


def main():
    check_platform()
    check_generation()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""haloforge: prove that vLLM runs on ROCm here.

  python verify_vllm.py
Checks: vLLM's current_platform is ROCm (vLLM detects ROCm only through amdsmi:
vllm/platforms/__init__.py rocm_platform_plugin; without it the platform is
UnspecifiedPlatform and `vllm serve` fails with "Failed to infer device type"). Prints
verified:/FAIL: lines, and a note: line when vLLM's device memory is the APU's BIOS carve-out
(see memory_note). What vLLM generates, and whether it is right, is the answers check
(verify_answers.py, judged by haloforge verify: lib/vllm.sh vllm_answers), which runs after.
"""

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


def main():
    check_platform()
    return 0


if __name__ == "__main__":
    sys.exit(main())

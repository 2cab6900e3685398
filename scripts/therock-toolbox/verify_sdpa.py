"""haloforge therock-toolbox verify: SDPA flash attention runs on the target GPU.

Usage: python verify_sdpa.py GFX_TARGET
Runs after ../lib/verify_torch.py (device, arch list, a matmul). Prints "verified: …" when
the flash backend ran and matched the math one, "FAIL: …" and exit 1 otherwise. Like the
AOTriton seed's backend-check.py: SDPA is forced onto the flash backend, so a silent fallback
to the math kernel counts as a failure. TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL=1 must be set
before torch is imported (the sdpa-flash-attn-not-available failure); it is set here.
"""

import os
import sys

os.environ.setdefault("TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL", "1")

import torch  # noqa: E402  (the environment above must come first)


def check_gpu(target):
    """The first device is the target GPU (gcnArchName, e.g. gfx1151:xnack-)."""
    print(f"torch {torch.__version__}, HIP {torch.version.hip}")
    if not torch.version.hip:
        return f"this torch is not a ROCm build (torch.version.hip is {torch.version.hip!r})"
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return "torch sees no GPU: No HIP GPUs are available (check /dev/kfd, /dev/dri and the render/video groups)"
    props = torch.cuda.get_device_properties(0)
    arch = getattr(props, "gcnArchName", "")
    print(f"device 0: {props.name}, {arch}, {props.total_memory / 2**30:.1f} GiB")
    if arch.split(":")[0] != target:
        return f"device 0 reports {arch!r}, expected {target} (is HSA_OVERRIDE_GFX_VERSION set?)"
    return None


def check_sdpa_flash():
    """scaled_dot_product_attention on the flash backend only, checked against the math one."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F

    backend = getattr(torch.backends.cuda, "preferred_rocm_fa_library", None)
    if backend is not None:
        print(f"preferred_rocm_fa_library(): {backend()}")
    q, k, v = (torch.randn(1, 8, 256, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    try:
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.cuda.synchronize()
    except RuntimeError as e:
        return f"SDPA flash attention not usable: {e}"
    with sdpa_kernel([SDPBackend.MATH]):
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    err = (out - ref).abs().max().item()
    print(f"SDPA flash vs math: max abs diff {err:.2e}")
    if not err < 2e-2:
        return f"SDPA flash attention gives wrong results (max abs diff {err})"
    print(f"verified: torch SDPA ran on the flash attention backend on {torch.cuda.get_device_properties(0).gcnArchName.split(':')[0]} and matches the math backend (max abs diff {err:.1e})")
    return None


def main(argv):
    target = argv[1] if len(argv) > 1 else "gfx1151"
    failed = False
    for name, check in (("gpu", lambda: check_gpu(target)), ("sdpa-flash", check_sdpa_flash)):
        problem = check()
        if problem:
            print(f"FAIL: {name}: {problem}")
            failed = True
            break  # later checks need the GPU
        print(f"ok: {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

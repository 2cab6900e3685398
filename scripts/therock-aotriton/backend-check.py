"""haloforge therock-aotriton: is PyTorch's flash attention AOTriton, usable, and working?

Run with the guide's environment (run-backend-check.sh sets it):
  TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL=1 PYTORCH_ROCM_ARCH=gfx1151 \
  TORCH_ROCM_AOTRITON_PREFER_DEFAULT=1 HIP_VISIBLE_DEVICES=0 python backend-check.py
Expected, and checked (exit 1 when any is not so):
  preferred_rocm_fa_library(): _ROCmFABackend.AOTriton
  can_use_flash_attention: True
  FLASH_ATTENTION: OK        (SDPA forced onto the flash backend runs and matches math)
"""

import os
import sys


def main():
    failures = []
    import torch
    import torch.nn.functional as F

    print(f"torch {torch.__version__} hip {getattr(torch.version, 'hip', None)}")
    for name in ("TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL", "PYTORCH_ROCM_ARCH",
                 "TORCH_ROCM_AOTRITON_PREFER_DEFAULT", "HIP_VISIBLE_DEVICES", "TORCH_ROCM_FA_PREFER_CK"):
        print(f"{name}={os.environ.get(name, '')}")
    if os.environ.get("TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL") != "1":
        failures.append("TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL=1 must be set before torch is imported")
    if not torch.cuda.is_available():
        print("FAIL: No HIP GPUs are available")
        return 1
    props = torch.cuda.get_device_properties(0)
    print(f"device: {props.name} {props.gcnArchName}")

    backend = torch.backends.cuda.preferred_rocm_fa_library()
    print(f"preferred_rocm_fa_library(): {backend}")
    if "AOTriton" not in str(backend):
        failures.append(f"preferred ROCm flash attention library is {backend}, not AOTriton")

    print(f"flash_sdp_enabled: {torch.backends.cuda.flash_sdp_enabled()}")
    q, k, v = (torch.randn(2, 8, 256, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    params = sdpa_params(torch, q, k, v)
    usable = torch.backends.cuda.can_use_flash_attention(params, debug=True)
    print(f"can_use_flash_attention: {usable}")
    if not usable:
        failures.append("flash attention is not usable for fp16 (2, 8, 256, 64) (see the debug lines above)")

    from torch.nn.attention import SDPBackend, sdpa_kernel
    try:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.cuda.synchronize()
        with sdpa_kernel(SDPBackend.MATH):
            ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        err = (out.float() - ref.float()).abs().max().item()
        if err > 2e-2:
            failures.append(f"flash attention differs from math by {err:.3g}")
            print(f"FLASH_ATTENTION: WRONG (max error {err:.3g})")
        else:
            print(f"FLASH_ATTENTION: OK (max error vs math {err:.2g})")
    except RuntimeError as exc:
        failures.append(f"forced flash attention failed: {exc}")
        print(f"FLASH_ATTENTION: FAILED ({exc})")

    try:
        with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
            F.scaled_dot_product_attention(q, k, v)
        torch.cuda.synchronize()
        print("EFFICIENT_ATTENTION: OK")
    except RuntimeError as exc:
        # The guide: on some gfx11 nightlies the efficient backend fails; flash is what counts.
        print(f"EFFICIENT_ATTENTION: not available ({exc}); not required")

    for f in failures:
        print(f"FAIL: {f}")
    if failures:
        return 1
    print("OK: SDPA uses AOTriton flash attention")
    print(f"verified: SDPA ran AOTriton flash attention on {props.gcnArchName.split(':')[0]} and matches the math backend")
    return 0


def sdpa_params(torch, q, k, v):
    """SDPAParams gained enable_gqa in 2.5; accept both signatures."""
    try:
        return torch.backends.cuda.SDPAParams(q, k, v, None, 0.0, True, False)
    except TypeError:
        return torch.backends.cuda.SDPAParams(q, k, v, None, 0.0, True)


if __name__ == "__main__":
    sys.exit(main())

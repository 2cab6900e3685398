"""haloforge therock-toolbox verify: one flash-attention forward pass on the GPU.

Usage: FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE python verify_fa.py
flash_attn_func (ROCm fork, Triton AMD backend) on fp16 q, k, v of shape
(batch, seqlen, heads, dim) = (1, 256, 8, 64), causal, compared with torch's math SDPA.
Prints "verified: …" or "FAIL: …" (exit 1).
"""

import os
import sys


def main():
    if os.environ.get("FLASH_ATTENTION_TRITON_AMD_ENABLE") != "TRUE":
        print("FAIL: FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE must be set: the ROCm fork's Triton backend is what was built")
        return 1
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    try:
        import flash_attn
        from flash_attn import flash_attn_func
    except Exception as exc:
        print(f"FAIL: import flash_attn: {exc}")
        return 1
    q, k, v = (torch.randn(1, 256, 8, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    try:
        out = flash_attn_func(q, k, v, causal=True)
        torch.cuda.synchronize()
    except Exception as exc:
        print(f"FAIL: flash_attn_func forward pass: {type(exc).__name__}: {exc}")
        return 1
    with sdpa_kernel([SDPBackend.MATH]):
        ref = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
    err = (out.float() - ref.transpose(1, 2).float()).abs().max().item()
    print(f"flash_attn {flash_attn.__version__}: max abs diff vs math SDPA {err:.2e}")
    if not err < 2e-2:
        print(f"FAIL: flash-attention's forward pass differs from math SDPA by {err}")
        return 1
    arch = torch.cuda.get_device_properties(0).gcnArchName.split(":")[0]
    print(f"verified: flash-attention {flash_attn.__version__} (Triton AMD) ran a forward pass on {arch} matching math SDPA (max abs diff {err:.1e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""haloforge therock-aotriton: SDPA timing, AOTriton flash attention against math.

Run with AMD_SERIALIZE_KERNEL=0 (05-attention-bench.sh sets it): serialised kernels
measure the debugging mode, not the GPU.
"""

import os
import sys
import time


def bench(fn, iters):
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters


def main():
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    print(f"torch {torch.__version__}; AMD_SERIALIZE_KERNEL={os.environ.get('AMD_SERIALIZE_KERNEL', '')}")
    print(f"backend: {torch.backends.cuda.preferred_rocm_fa_library()}")
    print(f"{'batch':>5} {'heads':>5} {'seq':>6} {'dim':>4}  {'flash ms':>9} {'TFLOP/s':>8}  {'math ms':>9}")
    for b, h, s, d in ((1, 32, 1024, 128), (1, 32, 4096, 128), (4, 16, 2048, 64)):
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
        flops = 4 * b * h * s * s * d / 2  # causal: half the score matrix

        def run(backend):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)

        t_flash = bench(lambda: run(SDPBackend.FLASH_ATTENTION), 20)
        t_math = bench(lambda: run(SDPBackend.MATH), 5) if s <= 2048 else float("nan")
        print(f"{b:>5} {h:>5} {s:>6} {d:>4}  {t_flash * 1e3:>9.3f} {flops / t_flash / 1e12:>8.2f}  {t_math * 1e3:>9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

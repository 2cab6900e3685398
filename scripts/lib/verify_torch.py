"""haloforge: check torch (and vLLM) inside a container image.

Run inside the image: python3 /haloforge/verify_torch.py
Environment:
  HALOFORGE_EXPECT_ARCH   the gfx target torch must report (gfx1151 natively, gfx1100 under the
                   HSA_OVERRIDE_GFX_VERSION=11.0.0 spoof); empty: any
  HALOFORGE_CHECK_VLLM=1  also import vllm and print its version
Exit status: 0 all good, 1 a check failed (the reason is printed last).
"""

import os
import sys


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def main():
    try:
        import torch
    except Exception as exc:  # an ImportError names the missing shared library
        fail(f"import torch: {exc}")
    print(f"torch {torch.__version__} hip {getattr(torch.version, 'hip', None)}")
    if not getattr(torch.version, "hip", None):
        fail("this torch is not a ROCm build (torch.version.hip is empty)")
    count = torch.cuda.device_count()
    print(f"devices: {count}")
    if count == 0:
        fail("No HIP GPUs are available: torch sees no GPU (devices passed? groups render/video?)")
    props = torch.cuda.get_device_properties(0)
    arch = props.gcnArchName.split(":")[0]
    print(f"device 0: {props.name} arch {props.gcnArchName}")
    override = os.environ.get("HSA_OVERRIDE_GFX_VERSION")
    if override:
        print(f"HSA_OVERRIDE_GFX_VERSION={override}: the runtime reports the spoofed target")
    want = os.environ.get("HALOFORGE_EXPECT_ARCH", "")
    if want and arch != want:
        fail(f"torch reports {arch}, expected {want}")
    # A real kernel launch: a missing code object fails here, not at import.
    a = torch.randn(256, 256, device="cuda")
    b = (a @ a).sum().item()
    torch.cuda.synchronize()
    print(f"matmul on the GPU: ok ({b:.3g})")
    if os.environ.get("HALOFORGE_CHECK_VLLM") == "1":
        try:
            import vllm
        except Exception as exc:
            fail(f"import vllm: {exc}")
        print(f"vllm {vllm.__version__}")
    print("OK")


if __name__ == "__main__":
    main()

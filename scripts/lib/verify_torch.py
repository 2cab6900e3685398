"""haloforge: prove that torch runs on this GPU (and, on request, that vLLM does).

Run with the interpreter under test (a venv, or python3 inside an image):
  python verify_torch.py
Environment:
  HALOFORGE_EXPECT_ARCH   the gfx target device 0 must report (gfx1151 natively, gfx1100 under
                          the HSA_OVERRIDE_GFX_VERSION=11.0.0 spoof); empty: any
  HALOFORGE_CHECK_VLLM=1  then run verify_vllm.py's checks (next to this file)
Prints "verified: WHAT" for what it proved and "not-verified: REASON" for what it could not
check (haloforge records both), "FAIL: REASON" and exit 1 when a check fails, exit 0 otherwise.
A torch whose arch list lacks the GPU's target fails here, before a kernel dies with
"invalid device function" (torch 2.8.0+rocm6.4 carries no gfx1151: pytorch#167299).
"""

import os
import sys


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def check_torch():
    """The device, its target in torch's arch list, and a matmul that matches the CPU's."""
    try:
        import torch
    except Exception as exc:  # an ImportError names the missing shared library
        fail(f"import torch: {exc}")
    hip = getattr(torch.version, "hip", None)
    print(f"torch {torch.__version__} hip {hip}", flush=True)
    if not hip:
        fail("this torch is not a ROCm build (torch.version.hip is empty)")
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        fail("No HIP GPUs are available: torch sees no GPU (devices passed? groups render/video? /dev/kfd?)")
    props = torch.cuda.get_device_properties(0)
    arch = props.gcnArchName.split(":")[0]
    print(f"device 0: {props.name} arch {props.gcnArchName}", flush=True)
    override = os.environ.get("HSA_OVERRIDE_GFX_VERSION")
    if override:
        print(f"HSA_OVERRIDE_GFX_VERSION={override}: the runtime reports the spoofed target")
    want = os.environ.get("HALOFORGE_EXPECT_ARCH", "")
    if want and arch != want:
        fail(f"device 0 reports {arch}, expected {want} (is HSA_OVERRIDE_GFX_VERSION set?)")
    archs = [a.split(":")[0] for a in torch.cuda.get_arch_list()]
    print(f"torch arch list: {' '.join(archs) or '(empty)'}", flush=True)
    if arch not in archs:
        fail(f"this torch carries no kernels for {arch} (its arch list: {' '.join(archs) or 'empty'}): every kernel would die with 'invalid device function'; install a torch built for {arch}")
    # A real kernel: a missing or broken code object fails here, not at import.
    a = torch.arange(64 * 64, dtype=torch.float32).reshape(64, 64) / 4096
    try:
        got = (a.to("cuda") @ a.to("cuda")).cpu()
        torch.cuda.synchronize()
    except RuntimeError as exc:
        fail(f"matmul on {arch}: {exc}")
    diff = (got - a @ a).abs().max().item()
    if not diff < 1e-3:
        fail(f"matmul on {arch} differs from the CPU's by {diff}")
    print(f"verified: torch {torch.__version__} ran a matmul on {arch} ({props.name}) and it matches the CPU; {arch} is in its arch list", flush=True)


def main():
    check_torch()
    if os.environ.get("HALOFORGE_CHECK_VLLM") == "1":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import verify_vllm

        return verify_vllm.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())

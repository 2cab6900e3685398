"""haloforge therock-aotriton: load the AOTriton library torch ships, directly.

torch.ops.aotriton listing only ['name'] is normal in this packaging (the guide): SDPA
still uses AOTriton. This check loads libaotriton_v2.so from torch/lib itself, so a torch
built without it, or with a broken one, fails here with the reason.
"""

import ctypes
import glob
import os
import sys


def main():
    import torch

    lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    found = sorted(glob.glob(os.path.join(lib, "libaotriton_v2.so*")))
    if not found:
        print(f"FAIL: no libaotriton_v2.so* in {lib}: torch was built without AOTriton")
        return 1
    ctypes.CDLL(found[0], mode=ctypes.RTLD_GLOBAL)
    print(f"loaded {found[0]}")
    images = os.path.join(lib, "aotriton.images")
    if os.path.isdir(images):
        archs = sorted(os.listdir(images))
        print(f"aotriton.images: {', '.join(archs) or '(empty)'}")
    ops = dir(getattr(torch.ops, "aotriton", None))
    print(f"torch.ops.aotriton: {[o for o in ops if not o.startswith('_')]}")
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())

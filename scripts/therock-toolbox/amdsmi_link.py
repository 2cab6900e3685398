"""haloforge therock-toolbox: make the SDK's amdsmi package load the SDK's libamd_smi.

amdsmi looks for libamd_smi.so inside its own package first, then $ROCM_PATH/lib, then
/opt/rocm/lib (amdsmi's README, "Search order"). TheRock's rocm-sdk-core ships only the
versioned soname (libamd_smi.so.26 on ROCm 7.14, .27 on ROCm 10), so `import amdsmi` can
fail to find it. This links the library rocm_sdk.find_libraries("amd_smi") names into the
package as libamd_smi.so, then checks that amdsmi imports. On a machine with the GPU it
also initialises amdsmi and counts processors, as vLLM's platform detection does.
Exit 0 when amdsmi imports; 1 with the reason otherwise.
"""

import os
import sys


def main():
    import importlib.util

    spec = importlib.util.find_spec("amdsmi")
    if spec is None or not spec.submodule_search_locations:
        print("FAIL: amdsmi is not installed in this venv")
        return 1
    pkg = list(spec.submodule_search_locations)[0]
    link = os.path.join(pkg, "libamd_smi.so")
    import rocm_sdk

    lib = rocm_sdk.find_libraries("amd_smi")[0]
    if os.path.realpath(link) != os.path.realpath(lib):
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(lib, link)
        print(f"linked {link} -> {lib}")
    else:
        print(f"{link} -> {lib}")
    try:
        import amdsmi
    except Exception as exc:  # an OSError names the library it could not load
        print(f"FAIL: import amdsmi: {exc}")
        return 1
    print(f"amdsmi imported from {os.path.dirname(amdsmi.__file__)}")
    if os.path.exists("/dev/kfd"):
        try:
            amdsmi.amdsmi_init()
            handles = amdsmi.amdsmi_get_processor_handles()
            print(f"amdsmi sees {len(handles)} processor(s)")
            amdsmi.amdsmi_shut_down()
        except Exception as exc:
            print(f"warning: amdsmi_init on this machine: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

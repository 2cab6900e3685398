# Excerpt of rocm_sdk/__init__.py (ROCm/TheRock,
# build_tools/packaging/python/templates/rocm/src/rocm_sdk/__init__.py):
# the two signatures the demo's FixCommand patches.
def preload_libraries(*shortnames: str, rtld_global: bool = True):
    mode = ctypes.RTLD_GLOBAL if rtld_global is True else ctypes.RTLD_LOCAL


def initialize_process(
    *,
    preload_shortnames: Optional[List[str]] = None,
    rtld_global: bool = True,
    env_override: bool = True,

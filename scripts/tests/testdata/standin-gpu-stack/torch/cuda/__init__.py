"""Stand-in torch.cuda (see ../../README.md)."""
import os


def is_available():
    return os.environ.get("STANDIN_NO_GPU") != "1"


def device_count():
    return 1 if is_available() else 0


class _Props:
    name = "Radeon 8060S Graphics (stand-in)"
    total_memory = 96 * 2**30

    @property
    def gcnArchName(self):  # noqa: N802 (torch's name)
        return os.environ.get("STANDIN_GFX", "gfx1151")


def get_device_properties(i):
    return _Props()


def get_arch_list():
    return os.environ.get("STANDIN_ARCH_LIST", "gfx1151").split() if is_available() else []


def synchronize():
    pass

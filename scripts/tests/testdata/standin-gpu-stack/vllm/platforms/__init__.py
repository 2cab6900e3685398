"""Stand-in vllm.platforms (see ../../README.md)."""
import os


class _Platform:
    def is_rocm(self):
        return type(self).__name__ == "RocmPlatform"

    def get_device_total_memory(self):
        # What amdsmi reports as VRAM (default: the 96 GiB torch.cuda stand-in reports too).
        return int(os.environ.get("STANDIN_VLLM_DEVICE_MEMORY", str(96 * 2**30)))


current_platform = type(os.environ.get("STANDIN_VLLM_PLATFORM", "RocmPlatform"), (_Platform,), {})()

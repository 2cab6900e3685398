"""Stand-in vllm.platforms (see ../../README.md)."""
import os


class _Platform:
    def is_rocm(self):
        return type(self).__name__ == "RocmPlatform"


current_platform = type(os.environ.get("STANDIN_VLLM_PLATFORM", "RocmPlatform"), (_Platform,), {})()

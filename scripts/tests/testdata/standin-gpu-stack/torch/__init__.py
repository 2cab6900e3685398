"""Stand-in for a ROCm torch on a GPU (see ../README.md): not the real torch."""
import os

__version__ = "2.11.0+rocm7.14.0.standin"
float16, float32 = "float16", "float32"


class version:  # noqa: N801 (torch.version is a module in the real package)
    hip = os.environ.get("STANDIN_HIP", "7.14.standin") or None


class Tensor:
    def __init__(self, device="cpu", value=0.0):
        self.device, self.value = device, value

    def _kernel(self):
        if self.device == "cuda" and os.environ.get("STANDIN_KERNEL_ERROR"):
            raise RuntimeError(os.environ["STANDIN_KERNEL_ERROR"])
        return self

    def to(self, device):
        return Tensor(device, self.value)._kernel()

    def cpu(self):
        return Tensor("cpu", self.value)

    def float(self):
        return self

    def reshape(self, *shape):
        return self

    def transpose(self, *dims):
        return self

    def __truediv__(self, other):
        return self

    def __matmul__(self, other):
        return Tensor(self.device, self.value)._kernel()

    def __sub__(self, other):
        return Tensor(self.device, float(os.environ.get("STANDIN_DIFF", "0")))

    def abs(self):
        return self

    def max(self):
        return self

    def item(self):
        return self.value


def arange(*a, dtype=None, device="cpu"):
    return Tensor(device)


def randn(*shape, device="cpu", dtype=None):
    return Tensor(device)._kernel()


from . import cuda, backends, nn  # noqa: E402,F401

"""Stand-in torch.nn.functional (see ../../README.md)."""
from torch import Tensor


def scaled_dot_product_attention(q, k, v, is_causal=False):
    return Tensor(q.device)._kernel()

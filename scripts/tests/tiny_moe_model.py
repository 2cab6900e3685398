#!/usr/bin/env python3
"""Write a tiny mixture-of-experts GGUF (qwen3moe architecture) with random weights.

bench's memory-bandwidth roofline counts, for a mixture-of-experts model, the weights every
token reads plus only the active experts' share of the expert tensors. This file is the real
GGUF its tests read that share from (steps/bench/testdata/tiny-moe.gguf), and the model the
real llama-bench ran on lavapipe for steps/bench/testdata/llama-bench-moe-lavapipe.jsonl
(scripts/tests/roofline-fixtures.sh makes both). Needs only python3-gguf and python3-numpy.

usage: tiny_moe_model.py OUT.gguf [--seed N]

Shape: 2 layers, n_embd 64, 4 heads of 16, 2 KV heads, 8 experts of which 2 are used per
token, expert FFN 32; the same byte-level vocabulary of 270 tokens as the tiny dense model
(scripts/llamacpp-distro/tiny_model.py). The expert tensors are F16 and hold most of the
bytes; attention matrices are F16, norms and the router F32, the token embedding and the
separate output matrix F16.
"""

import argparse
import os
import sys

try:
    import numpy as np
    import gguf
except ImportError as exc:
    sys.exit(f"tiny_moe_model.py: {exc}: install python3-gguf and python3-numpy")

# The vocabulary is the tiny dense model's own (scripts/llamacpp-distro/tiny_model.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "llamacpp-distro"))
from tiny_model import vocab  # noqa: E402

N_LAYER = 2
N_EMBD = 64
N_HEAD = 4
N_HEAD_KV = 2
HEAD_DIM = N_EMBD // N_HEAD
N_EXPERT = 8
N_EXPERT_USED = 2
N_FF_EXP = 32
N_CTX = 512


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1151)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    tokens, scores, types = vocab()
    n_vocab = len(tokens)

    w = gguf.GGUFWriter(args.out, "qwen3moe")
    w.add_name("haloforge tiny random moe")
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF_EXP * N_EXPERT_USED)
    w.add_expert_feed_forward_length(N_FF_EXP)
    w.add_expert_count(N_EXPERT)
    w.add_expert_used_count(N_EXPERT_USED)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)

    def f16(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float16)

    def f32(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    def ones(n):
        return np.ones(n, dtype=np.float32)

    # numpy shapes are ggml's dimensions reversed: ffn_gate_exps is
    # [n_embd, n_ff_exp, n_expert] in ggml, (n_expert, n_ff_exp, n_embd) here.
    w.add_tensor("token_embd.weight", f16(n_vocab, N_EMBD))
    for i in range(N_LAYER):
        w.add_tensor(f"blk.{i}.attn_norm.weight", ones(N_EMBD))
        w.add_tensor(f"blk.{i}.attn_q.weight", f16(N_HEAD * HEAD_DIM, N_EMBD))
        w.add_tensor(f"blk.{i}.attn_k.weight", f16(N_HEAD_KV * HEAD_DIM, N_EMBD))
        w.add_tensor(f"blk.{i}.attn_v.weight", f16(N_HEAD_KV * HEAD_DIM, N_EMBD))
        w.add_tensor(f"blk.{i}.attn_output.weight", f16(N_EMBD, N_HEAD * HEAD_DIM))
        w.add_tensor(f"blk.{i}.attn_q_norm.weight", ones(HEAD_DIM))
        w.add_tensor(f"blk.{i}.attn_k_norm.weight", ones(HEAD_DIM))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", ones(N_EMBD))
        w.add_tensor(f"blk.{i}.ffn_gate_inp.weight", f32(N_EXPERT, N_EMBD))
        w.add_tensor(f"blk.{i}.ffn_gate_exps.weight", f16(N_EXPERT, N_FF_EXP, N_EMBD))
        w.add_tensor(f"blk.{i}.ffn_up_exps.weight", f16(N_EXPERT, N_FF_EXP, N_EMBD))
        w.add_tensor(f"blk.{i}.ffn_down_exps.weight", f16(N_EXPERT, N_EMBD, N_FF_EXP))
    w.add_tensor("output_norm.weight", ones(N_EMBD))
    w.add_tensor("output.weight", f16(n_vocab, N_EMBD))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Write a tiny llama-architecture GGUF with random weights (about 0.7 MB).

It proves that an engine and a backend really run (a kernel runs, a token comes out), and,
compared with the same file on llama.cpp's CPU backend (haloforge verify), that the backend
computes right: the text it generates is not language, the numbers it measures are not a
speed claim. Needs only python3-gguf and python3-numpy (Debian/Ubuntu packages), no download.

usage: tiny_model.py OUT.gguf [--seed N]

Shape: 2 layers, n_embd 128, 4 heads, 2 KV heads (grouped-query attention), n_ff 256,
context 512; a SentencePiece-style byte-level vocabulary of 270 tokens (3 specials, the
256 byte tokens <0x00>..<0xFF>, 11 pieces). Matrices are F16, norms F32.

The random weights are made a clearer test model (SHARPEN), so that a comparison of two
backends is not all near-ties: the output matrix x40, so the logits are sharp and greedy
choices clear; its rows of the special tokens, the control bytes and the bytes 0x7F-0xFF
set to 0, so the greedy text is printable ASCII (llama-server reports a token cut inside a
UTF-8 character together with the next one, or not at all); q and k x8 in both layers (x64
on the attention scores), so an answer depends on the whole prompt rather than the last
token (a random model otherwise loops on one or two tokens, which haloforge verify rightly
calls degenerate output). Each scale is applied in float32 and stored back as F16.
"""

import argparse
import sys

try:
    import numpy as np
    import gguf
except ImportError as exc:  # the step installs them; say which package when run by hand
    sys.exit(f"tiny_model.py: {exc}: install python3-gguf and python3-numpy")

N_LAYER = 2
N_EMBD = 128
N_HEAD = 4
N_HEAD_KV = 2
N_FF = 256
N_CTX = 512
HEAD_DIM = N_EMBD // N_HEAD
PIECES = ["\u2581", "\u2581a", "\u2581the", "e", "t", "o", "n", "s", "\u2581is", "\u2581halo", "."]
# SHARPEN: (tensor, rows or None for all, factor), in order (see the docstring).
SHARPEN = [("output.weight", None, 40.0), ("output.weight", (0, 35), 0.0), ("output.weight", (130, 259), 0.0)] + [
    (f"blk.{i}.attn_{m}.weight", None, 8.0) for i in range(N_LAYER) for m in ("q", "k")
]


def sharpen(name, data):
    """The tensor with SHARPEN's scales for it applied, each in float32."""
    for tensor, rows, factor in SHARPEN:
        if tensor != name:
            continue
        part = data if rows is None else data[rows[0]:rows[1]]
        part[...] = (part.astype(np.float32) * factor).astype(data.dtype)
    return data


def vocab():
    """Tokens, scores and types of a byte-level SentencePiece vocabulary."""
    tokens, scores, types = [], [], []
    for tok in ["<unk>", "<s>", "</s>"]:
        tokens.append(tok)
        scores.append(0.0)
        types.append(gguf.TokenType.UNKNOWN if tok == "<unk>" else gguf.TokenType.CONTROL)
    for b in range(256):
        tokens.append(f"<0x{b:02X}>")
        scores.append(0.0)
        types.append(gguf.TokenType.BYTE)
    for i, piece in enumerate(PIECES):
        tokens.append(piece)
        scores.append(-float(i + 1))
        types.append(gguf.TokenType.NORMAL)
    return tokens, scores, types


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1151)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    tokens, scores, types = vocab()
    n_vocab = len(tokens)

    w = gguf.GGUFWriter(args.out, "llama")
    w.add_name("haloforge tiny random llama")
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)

    def mat(rows, cols):
        return (rng.standard_normal((rows, cols)) * 0.02).astype(np.float16)

    def add(name, data):
        w.add_tensor(name, sharpen(name, data))

    def norm():
        return np.ones(N_EMBD, dtype=np.float32)

    kv = N_HEAD_KV * HEAD_DIM
    add("token_embd.weight", mat(n_vocab, N_EMBD))
    for i in range(N_LAYER):
        add(f"blk.{i}.attn_norm.weight", norm())
        add(f"blk.{i}.attn_q.weight", mat(N_EMBD, N_EMBD))
        add(f"blk.{i}.attn_k.weight", mat(kv, N_EMBD))
        add(f"blk.{i}.attn_v.weight", mat(kv, N_EMBD))
        add(f"blk.{i}.attn_output.weight", mat(N_EMBD, N_EMBD))
        add(f"blk.{i}.ffn_norm.weight", norm())
        add(f"blk.{i}.ffn_gate.weight", mat(N_FF, N_EMBD))
        add(f"blk.{i}.ffn_up.weight", mat(N_FF, N_EMBD))
        add(f"blk.{i}.ffn_down.weight", mat(N_EMBD, N_FF))
    add("output_norm.weight", norm())
    add("output.weight", mat(n_vocab, N_EMBD))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Write GGUF files with the shapes of real models and zero weights (the data a hole).

The fit estimate's test (fit_llamacpp_test.go) compares its numbers with the buffers
llama-server printed for these files (testdata/buffers); the Go test writes the same
shapes itself, and pygguf_test.go checks that both writers agree where python3-gguf is
installed. Needs python3-gguf (Debian sid) only; the files take no disk for their data.

usage: gguf_shapes.py OUTDIR     writes tiny-moe.gguf, llama1b-q8.gguf, qwen3moe-4l-q8.gguf
(the tiny dense model is scripts/llamacpp-distro/tiny_model.py's)
"""

import os
import sys

import numpy as np
import gguf

Q = gguf.GGMLQuantizationType


def vocab(n):
    """A byte-level SentencePiece vocabulary of n tokens, as tiny_model.py's."""
    toks, scores = ["<unk>", "<s>", "</s>"], [0.0] * 3
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    for b in range(256):
        toks.append(f"<0x{b:02X}>")
        scores.append(0.0)
        types.append(gguf.TokenType.BYTE)
    i = 0
    while len(toks) < n:
        toks.append(f"\u2581p{i}")
        scores.append(-float(i + 1))
        types.append(gguf.TokenType.NORMAL)
        i += 1
    return toks, scores, types


def model(path, arch, layers, embd, heads, kv_heads, ff, n_vocab, ctx, qt, experts=0, used=0, ff_exp=0, hd=0):
    """One model: every matrix of type qt, norms F32; experts in place of the FFN when given."""
    hd = hd or embd // heads
    a = arch + "."
    w = gguf.GGUFWriter(path, arch)
    for key, val in [("context_length", ctx), ("embedding_length", embd), ("block_count", layers),
                     ("feed_forward_length", ff), ("attention.head_count", heads),
                     ("attention.head_count_kv", kv_heads), ("rope.dimension_count", hd)]:
        w.add_uint32(a + key, val)
    w.add_float32(a + "attention.layer_norm_rms_epsilon", 1e-6)
    w.add_float32(a + "rope.freq_base", 1e6)
    w.add_uint32("general.file_type", 7 if qt == Q.Q8_0 else 1)
    if arch == "qwen3moe":
        w.add_uint32(a + "attention.key_length", hd)
        w.add_uint32(a + "attention.value_length", hd)
        w.add_uint32(a + "expert_feed_forward_length", ff_exp)
    if experts:
        w.add_uint32(a + "expert_count", experts)
        w.add_uint32(a + "expert_used_count", used)
    w.add_name(os.path.basename(path))
    toks, scores, types = vocab(n_vocab)
    w.add_tokenizer_model("llama")
    w.add_token_list(toks)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    # (name, numpy-order shape, type): GGUF stores the dimensions reversed
    ts = [("token_embd.weight", (n_vocab, embd), qt)]
    for i in range(layers):
        p = f"blk.{i}."
        ts += [(p + "attn_norm.weight", (embd,), Q.F32), (p + "attn_q.weight", (heads * hd, embd), qt),
               (p + "attn_k.weight", (kv_heads * hd, embd), qt), (p + "attn_v.weight", (kv_heads * hd, embd), qt),
               (p + "attn_output.weight", (embd, heads * hd), qt), (p + "ffn_norm.weight", (embd,), Q.F32)]
        if arch == "qwen3moe":
            ts += [(p + "attn_q_norm.weight", (hd,), Q.F32), (p + "attn_k_norm.weight", (hd,), Q.F32)]
        if experts:
            f = ff_exp or ff
            ts += [(p + "ffn_gate_inp.weight", (experts, embd), Q.F32), (p + "ffn_gate_exps.weight", (experts, f, embd), qt),
                   (p + "ffn_up_exps.weight", (experts, f, embd), qt), (p + "ffn_down_exps.weight", (experts, embd, f), qt)]
        else:
            ts += [(p + "ffn_gate.weight", (ff, embd), qt), (p + "ffn_up.weight", (ff, embd), qt),
                   (p + "ffn_down.weight", (embd, ff), qt)]
    ts += [("output_norm.weight", (embd,), Q.F32), ("output.weight", (n_vocab, embd), qt)]
    data = 0
    for name, shape, q in ts:
        block, size = gguf.GGML_QUANT_SIZES[q]
        nbytes = int(np.prod(shape)) // block * size
        if q not in (Q.F32, Q.F16):  # quantised: the last dimension in bytes
            shape = shape[:-1] + (shape[-1] // block * size,)
        dtype = {Q.F32: np.float32, Q.F16: np.float16}.get(q, np.uint8)
        w.add_tensor_info(name, shape, dtype, nbytes, raw_dtype=q)
        data += (nbytes + 31) // 32 * 32
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    f = w.fout[0]
    f.flush()
    end = f.tell()
    f.write(b"\0" * ((32 - end % 32) % 32))
    f.truncate(f.tell() + data)
    f.close()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.splitlines()[-2].strip())
    out = sys.argv[1]
    model(f"{out}/tiny-moe.gguf", "llama", 2, 128, 4, 2, 256, 270, 512, Q.F16, experts=4, used=2)
    model(f"{out}/llama1b-q8.gguf", "llama", 16, 2048, 32, 8, 8192, 128256, 131072, Q.Q8_0)
    model(f"{out}/qwen3moe-4l-q8.gguf", "qwen3moe", 4, 2048, 32, 4, 6144, 151936, 262144, Q.Q8_0,
          experts=128, used=8, ff_exp=768, hd=128)


if __name__ == "__main__":
    main()

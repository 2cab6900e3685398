# shellcheck shell=bash
# The wrong stack the correctness proofs make real (sourced by integration-verify.sh and
# integration-distro.sh): the tiny model (scripts/llamacpp-distro/tiny_model.py) with one
# layer's ffn_down scaled by 1.3 by gguf_scale.py: the same tokenizer and shapes, a different
# computation. On the CPU against the original's reference, every prompt of haloforge verify
# differs by 0.69 to 1.39 nats at most (steps/verify/doc.go), over twice the tolerance.
# shellcheck disable=SC2034 # used by the scripts that source it
PERTURB=(blk.1.ffn_down.weight=1.3)

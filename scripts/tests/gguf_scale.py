#!/usr/bin/env python3
"""Copy a GGUF file with some of its tensors multiplied by a factor.

The correctness proof (integration-verify.sh) uses it twice on the tiny random model that
scripts/llamacpp-distro/tiny_model.py writes: to sharpen the model's logits (the output
matrix scaled up, so greedy choices are clear rather than near-ties), and to make a wrong
stack out of a right one (one layer's matrix scaled: same tokenizer, same shapes, a
different computation). Needs only python3-gguf and python3-numpy.

usage: gguf_scale.py IN.gguf OUT.gguf NAME[[START:END]]=FACTOR...

NAME=FACTOR scales the whole tensor; NAME[START:END]=FACTOR only its rows START..END-1 (for
token_embd.weight and output.weight a row is a token ID), applied after the whole-tensor
scales, in the order given. Only F32 and F16 tensors can be scaled (the tiny model has no
other kind). The result is checked: every named tensor and row exists, and the values stay
finite in the tensor's own type.
"""

import os
import re
import shutil
import sys

try:
    import numpy as np
    from gguf import GGUFReader
except ImportError as exc:
    sys.exit(f"gguf_scale.py: {exc}: install python3-gguf and python3-numpy")


def usage(message):
    """Bad usage: the message on stderr, exit 2."""
    print(message, file=sys.stderr)
    sys.exit(2)


EDIT = re.compile(r"^([A-Za-z0-9_.]+)(?:\[([0-9]+):([0-9]+)\])?=(.+)$")


def parse(args):
    """The edits as (name, rows or None, factor), whole tensors first; exits on bad input."""
    whole, rows = [], []
    for a in args:
        m = EDIT.match(a)
        try:
            value = float(m.group(4)) if m else None
        except ValueError:
            value = None
        if value is None or not np.isfinite(value):
            usage(f"gguf_scale.py: {a!r}: expected NAME=FACTOR or NAME[START:END]=FACTOR")
        if m.group(2) is None:
            whole.append((m.group(1), None, value))
        else:
            start, end = int(m.group(2)), int(m.group(3))
            if start >= end:
                usage(f"gguf_scale.py: {a!r}: START must be below END")
            rows.append((m.group(1), (start, end), value))
    return whole + rows


def main():
    if len(sys.argv) < 4:
        usage(next(line for line in __doc__.splitlines() if line.startswith("usage:")))
    src, dst, edits = sys.argv[1], sys.argv[2], parse(sys.argv[3:])
    shutil.copyfile(src, dst)
    try:
        scale(src, dst, edits)
    except BaseException:
        os.remove(dst)  # no half-edited copy left behind
        raise


def scale(src, dst, edits):
    """Applies the edits to dst, a copy of src, in place."""
    reader = GGUFReader(dst, "r+")  # a memory map of the copy: writes go to the file
    tensors = {t.name: t for t in reader.tensors}
    for name, rows, factor in edits:
        if name not in tensors:
            sys.exit(f"gguf_scale.py: no tensor {name} in {src}")
        t = tensors[name]
        data = t.data
        if data.dtype not in (np.float16, np.float32):
            sys.exit(f"gguf_scale.py: {name} is {t.tensor_type.name}: only F16 and F32 can be scaled")
        if rows is not None:
            if rows[1] > data.shape[0]:
                sys.exit(f"gguf_scale.py: {name} has {data.shape[0]} rows, not {rows[1]}")
            data = data[rows[0]:rows[1]]
        scaled = (data.astype(np.float32) * factor).astype(data.dtype)
        if not np.all(np.isfinite(scaled)):
            sys.exit(f"gguf_scale.py: {name} x{factor} leaves the range of {data.dtype}")
        data[...] = scaled
    reader.data.flush()  # the memory map written back to the file


if __name__ == "__main__":
    main()

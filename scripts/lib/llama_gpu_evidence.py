"""haloforge: did llama.cpp really run on the GPU? One checker for the llama.cpp tracks.

Usage:
  python3 llama_gpu_evidence.py bench FILE --backend NAME --device DEV [--allow-llvmpipe]
  python3 llama_gpu_evidence.py backend-ops FILE --device DEV [--allow-llvmpipe]

bench: FILE is llama-bench's output with -o json (an array), -o jsonl (one row a line), or
a log where -v lines and JSONL rows are mixed. llama-bench's "backends" field lists the
backends compiled in (test::get_backend() walks the registered backends), not the device
that ran: a Vulkan build with no usable device still says "Vulkan" while it runs on the CPU.
So every row must carry device evidence:
  - "devices" is DEV: the run was given -dev DEV, which llama-bench refuses for an unknown
    or CPU device ("error: invalid device: DEV"); "auto" says nothing about where it ran;
  - "gpu_info" names a GPU device (empty: ggml found none);
  - "n_gpu_layers" > 0, "avg_ts" > 0, and NAME among "backends";
and in the -v lines, an "offloaded N/M layers to GPU" with N = 0, or "found 0 ROCm devices",
fails it. llvmpipe (Mesa's CPU Vulkan device) counts only with --allow-llvmpipe.
On success stdout has a one-line summary, then "TEST<TAB>tokens/s" per row.

backend-ops: FILE is test-backend-ops' whole console output. A device whose name does not
match -b is printed as "Skipping" and counted as passed, and a filter that matches no test
prints "0/0 tests passed" with "Backend DEV: OK" (tests/test-backend-ops.cpp main and
console_printer). So DEV must have been tested: "Backend DEV: OK" and "N/N tests passed"
with N > 0, on a device whose description is not llvmpipe (unless --allow-llvmpipe). On
success stdout has a one-line summary.

Exit 0: proven. Exit 1: not proven; the reason is the one line on stderr. Exit 2: bad usage
or unreadable input. Reads at most 64 MiB.
"""

import json
import re
import sys

MAX_BYTES = 64 << 20
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
FOUND_DEVICES = re.compile(r"found (\d+) (ROCm|CUDA|Vulkan) devices", re.IGNORECASE)


def clean(text):
    """Text safe for a terminal and a one-line record: control characters become spaces."""
    return re.sub(r"[\x00-\x1f\x7f-\x9f]", " ", str(text))


def fail(msg, code=1):
    print(clean(msg), file=sys.stderr)
    sys.exit(code)


def read_text(path):
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror}", 2)
    if len(data) > MAX_BYTES:
        fail(f"{path} is larger than {MAX_BYTES >> 20} MiB", 2)
    return ANSI.sub("", data.decode("utf-8", "replace"))


def bench_rows(text):
    """The result rows of -o json (the whole text, or the array inside a log) or -o jsonl."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            rows = json.loads(stripped)
            if isinstance(rows, list):
                return [r for r in rows if isinstance(r, dict)]
        except ValueError:
            pass
    rows, block = [], None
    for line in text.splitlines():
        s = line.strip()
        if block is not None:
            block.append(line)
            if s == "]":
                try:
                    rows.extend(r for r in json.loads("\n".join(block)) if isinstance(r, dict))
                except ValueError:
                    pass
                block = None
            continue
        if s == "[":
            block = [line]
        elif s.startswith("{") and s.endswith("}"):
            try:
                row = json.loads(s)
            except ValueError:
                continue
            if isinstance(row, dict) and "avg_ts" in row:
                rows.append(row)
    return rows


def test_name(row):
    n_prompt, n_gen = int(number(row.get("n_prompt"))), int(number(row.get("n_gen")))
    if n_prompt and n_gen:
        name = f"pp{n_prompt}+tg{n_gen}"
    elif n_prompt:
        name = f"pp{n_prompt}"
    else:
        name = f"tg{n_gen}"
    if number(row.get("n_depth")):
        name += f" @ d{int(number(row['n_depth']))}"
    return name


def only_llvmpipe(gpu_info):
    """True when every GPU llama-bench lists is llvmpipe (descriptions hold commas, so the
    llvmpipe entries are cut out rather than the list split)."""
    rest = re.sub(r"llvmpipe(\s*\([^)]*\))?", "", gpu_info)
    return "llvmpipe" in gpu_info and not rest.replace(",", "").strip()


def number(value):
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return v if v == v and abs(v) != float("inf") else 0.0


def check_bench(text, backend, device, allow_llvmpipe):
    rows = bench_rows(text)
    if not rows:
        fail("llama-bench printed no result rows")
    for m in FOUND_DEVICES.finditer(text):
        if int(m.group(1)) == 0:
            fail(f"llama.cpp found 0 {m.group(2)} devices")
    offloads = [(int(a), int(b)) for a, b in OFFLOADED.findall(text)]
    for done, total in offloads:
        if done == 0:
            fail(f"llama.cpp offloaded 0/{total} layers to the GPU: the model ran on the CPU")
    for row in rows:
        backends = [b.strip() for b in str(row.get("backends", "")).split(",") if b.strip()]
        devices = str(row.get("devices", ""))
        gpu = str(row.get("gpu_info", "")).strip()
        where = test_name(row)
        if backend not in backends:
            fail(f"llama-bench ran with backends '{','.join(backends) or 'none'}', not {backend}: the GPU backend did not load (CPU only)")
        if devices.split("/")[0] != device:
            fail(f"llama-bench's {where} row ran on devices '{devices}', not {device}: without -dev {device} its rows do not say which device ran (a {backend} build with no usable device still reports backends '{backend}')")
        if not gpu:
            fail(f"llama-bench found no GPU device (gpu_info is empty): {where} ran on the CPU")
        if int(number(row.get("n_gpu_layers"))) <= 0:
            fail(f"llama-bench's {where} row offloaded no layer (n_gpu_layers {row.get('n_gpu_layers')})")
        if number(row.get("avg_ts")) <= 0:
            fail(f"llama-bench's {where} row produced no tokens (avg_ts {row.get('avg_ts')})")
        if not allow_llvmpipe and only_llvmpipe(gpu):
            fail(f"{backend} ran on llvmpipe, Mesa's CPU device, not on a GPU")
    first = rows[0]
    speeds = ", ".join(f"{test_name(r)}: {number(r.get('avg_ts')):.1f} t/s" for r in rows)
    extra = ""
    if offloads:
        extra = f", offloaded {offloads[-1][0]}/{offloads[-1][1]} layers"
    print(clean(f"llama.cpp {first.get('build_commit', '?')} (build {first.get('build_number', '?')}) on {backend} device {device} ({first.get('gpu_info', '').strip()}){extra}: {speeds}"))
    for r in rows:
        print(f"{clean(test_name(r))}\t{number(r.get('avg_ts')):.2f}")


def check_backend_ops(text, device, allow_llvmpipe):
    sections, current = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*Backend \d+/\d+: (\S+)\s*$", line)
        if m:
            current = m.group(1)
            sections[current] = []
            continue
        if current is not None:
            sections[current].append(line)
    if device not in sections:
        named = ", ".join(sections) or "none"
        fail(f"test-backend-ops tested no device {device} (devices: {named})")
    body = sections[device]
    if any(line.strip().startswith("Skipping") for line in body):
        fail(f"test-backend-ops skipped {device}")
    described = [line.split(":", 1)[1].strip() for line in body if line.strip().startswith("Device description:")]
    if described and only_llvmpipe(described[0]) and not allow_llvmpipe:
        fail(f"test-backend-ops ran on {device} = llvmpipe, Mesa's CPU device, not on a GPU")
    status = [m.group(1) for line in body for m in [re.match(rf"\s*Backend {re.escape(device)}: (\w+)", line)] if m]
    counts = [(int(a), int(b)) for line in body for a, b in re.findall(r"(\d+)/(\d+) tests passed", line)]
    if not status:
        fail(f"test-backend-ops printed no result for {device} (it stopped before the end?)")
    if status[-1] != "OK":
        failed = counts[-1] if counts else None
        detail = f": {failed[0]}/{failed[1]} tests passed" if failed else ""
        fail(f"test-backend-ops: {device} FAILED{detail}: it computes results that differ from the CPU")
    if not counts or counts[-1][1] == 0:
        fail(f"test-backend-ops ran 0 tests on {device}: the filter matched nothing it supports, so nothing was proven")
    passed, total = counts[-1]
    if passed != total:
        fail(f"test-backend-ops: {passed}/{total} tests passed on {device}")
    on = f" ({described[0]})" if described else ""
    print(clean(f"test-backend-ops: {passed}/{total} tests passed on {device}{on}"))


def main(argv):
    if len(argv) < 3 or argv[1] not in ("bench", "backend-ops"):
        fail(__doc__.split("\n\n")[1], 2)
    mode, path, args = argv[1], argv[2], argv[3:]
    opts, flags, i = {}, set(), 0
    while i < len(args):
        if args[i] in ("--backend", "--device") and i + 1 < len(args):
            opts[args[i]] = args[i + 1]
            i += 2
        elif args[i] == "--allow-llvmpipe":
            flags.add(args[i])
            i += 1
        else:
            fail(f"unknown argument: {args[i]}", 2)
    if "--device" not in opts or (mode == "bench" and "--backend" not in opts):
        fail(f"{mode} needs --device{' and --backend' if mode == 'bench' else ''}", 2)
    text = read_text(path)
    if mode == "bench":
        check_bench(text, opts["--backend"], opts["--device"], "--allow-llvmpipe" in flags)
    else:
        check_backend_ops(text, opts["--device"], "--allow-llvmpipe" in flags)


if __name__ == "__main__":
    main(sys.argv)

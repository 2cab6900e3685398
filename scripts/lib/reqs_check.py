"""haloforge: a pip requirements file against haloforge's pins, before pip sees it.

Usage:
  python reqs_check.py FILE --pins PINS     every pinned name FILE asks for must be satisfied
  python reqs_check.py FILE --torch VERSION FILE's torch==X line (if any) must be VERSION

FILE is read as pip reads it: its -r/--requirement includes are resolved relative to the
file that names them, option lines (--extra-index-url, -c, …) and comments are skipped, and
environment markers are evaluated for this interpreter. With --pins, a requirement whose
name PINS (NAME==VERSION lines, haloforge's python-pins.txt) pins, and whose specifier that
version does not satisfy, is a conflict: pip, given PINS as --constraint, would stop with
its raw "ResolutionImpossible"; this names the file, the line and the pin instead. With
--torch, a `torch==X` pin in FILE that is not VERSION means the vLLM ref was made for
another torch than the venv's (its requirements/build/rock.txt pins TheRock's torch).
Exit 0: fine. Exit 3: conflicts (one line each on stderr). Exit 4: another torch. Exit 2:
bad usage, an unreadable or looping file, or no `packaging` module to read specifiers.
"""

import os
import re
import sys

MAX_FILES = 64
OPTION_WITH_ARG = re.compile(r"^\s*(-r|--requirement|-c|--constraint)\s*=?\s*(\S+)")
PIN_LINE = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9A-Za-z.+!_-]+)")


def fail(code, msg):
    print(f"reqs_check: {msg}", file=sys.stderr)
    sys.exit(code)


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(path, seen=None):
    """(file, line number, requirement string) for FILE and its -r includes."""
    seen = set() if seen is None else seen
    real = os.path.realpath(path)
    if real in seen:
        fail(2, f"{path}: included twice (a -r loop)")
    if len(seen) >= MAX_FILES:
        fail(2, f"{path}: more than {MAX_FILES} included files")
    seen.add(real)
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        fail(2, f"cannot read {path}: {exc}")
    out = []
    for n, raw in enumerate(lines, 1):
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line:
            continue
        m = OPTION_WITH_ARG.match(line)
        if m:
            if m.group(1) in ("-r", "--requirement"):
                out.extend(requirements(os.path.join(os.path.dirname(path), m.group(2)), seen))
            continue
        if line.startswith("-"):
            continue  # --extra-index-url, --index-url, -e …: not a requirement of a name
        out.append((path, n, line))
    return out


def parse_pins(path):
    pins = {}
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.split("#", 1)[0].strip()
                if not line:
                    continue
                m = PIN_LINE.fullmatch(line)
                if not m:
                    fail(2, f"{path}:{n}: not a NAME==VERSION pin: {line}")
                pins[norm(m.group(1))] = m.group(2)
    except OSError as exc:
        fail(2, f"cannot read {path}: {exc.strerror}")
    return pins


def main(argv):
    if len(argv) < 4 or argv[2] not in ("--pins", "--torch"):
        fail(2, "usage: reqs_check.py FILE --pins PINS | --torch VERSION")
    path, mode, value = argv[1], argv[2], argv[3]
    try:
        from packaging.requirements import InvalidRequirement, Requirement
        from packaging.version import InvalidVersion, Version
    except ImportError:
        fail(2, f"{sys.executable} has no `packaging` module to read the specifiers of {path}")
    reqs = []
    for where, n, text in requirements(path):
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue  # a URL or path line: pip's business, no name to hold to a pin
        if req.marker is not None and not req.marker.evaluate():
            continue
        reqs.append((where, n, text, req))
    if mode == "--torch":
        for where, n, text, req in reqs:
            if norm(req.name) != "torch":
                continue
            pinned = [s.version for s in req.specifier if s.operator in ("==", "===")]
            if not pinned:
                continue
            try:
                same = Version(pinned[0]) == Version(value)
            except InvalidVersion:
                same = pinned[0] == value
            if not same:
                print(f"reqs_check: {where}:{n}: this vLLM ref builds against torch {pinned[0]}, the venv has torch {value}", file=sys.stderr)
                print(pinned[0])
                sys.exit(4)
        return
    pins = parse_pins(value)
    problems = []
    for where, n, text, req in reqs:
        version = pins.get(norm(req.name))
        if version is None or not req.specifier:
            continue
        if not req.specifier.contains(version, prereleases=True):
            problems.append(f"{where}:{n}: {text!r} is not satisfied by the pin {req.name}=={version} ({value})")
    for p in problems:
        print(f"reqs_check: {p}", file=sys.stderr)
    if problems:
        sys.exit(3)


if __name__ == "__main__":
    main(sys.argv)

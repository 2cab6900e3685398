"""haloforge: the [build-system] requires of a source tree, checked against haloforge's pins.

Usage: python build_requires.py SRC_DIR [--pins FILE] [--exclude NAME]... [--allow-unpinned]

Prints one requirement a line: what SRC_DIR/pyproject.toml's [build-system] table requires
(PEP 518), or PEP 517's legacy default (setuptools>=40.8.0 and wheel) when the tree has no
pyproject.toml or the file has no [build-system] table. Names given with --exclude (PEP 503
normalised: the venv's torch, the distro's cmake) are left out. With --pins, every name left
must be pinned there as NAME==VERSION, and that version must satisfy the requirement's
specifier when `packaging` is importable; otherwise the exit status is 3 and stderr says
which name to pin. Exit 2 for a tree whose pyproject.toml cannot be used (bad TOML, a
[build-system] table without `requires`, a requires that is not a list of strings).
Needs Python 3.11+ (tomllib); the TheRock venvs are 3.12 or newer.
"""

import os
import re
import sys

LEGACY_DEFAULT = ["setuptools>=40.8.0", "wheel"]
NAME = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")


def norm(name):
    """PEP 503 normalised project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def fail(code, msg):
    print(f"build_requires: {msg}", file=sys.stderr)
    sys.exit(code)


def read_requires(src):
    path = os.path.join(src, "pyproject.toml")
    if not os.path.isdir(src):
        fail(2, f"{src}: no such source directory")
    if not os.path.exists(path):
        return LEGACY_DEFAULT, f"{src} has no pyproject.toml: PEP 517 legacy default"
    try:
        import tomllib
    except ImportError:
        fail(2, f"Python {sys.version.split()[0]} has no tomllib (3.11+ needed to read {path})")
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        fail(2, f"{path}: not valid TOML: {exc}")
    table = data.get("build-system")
    if table is None:
        return LEGACY_DEFAULT, f"{path} has no [build-system] table: PEP 517 legacy default"
    if "requires" not in table:
        fail(2, f"{path}: [build-system] has no `requires` key (PEP 518 makes it mandatory)")
    reqs = table["requires"]
    if not isinstance(reqs, list) or not all(isinstance(r, str) for r in reqs):
        fail(2, f"{path}: [build-system] requires must be a list of strings")
    return reqs, f"{path} [build-system] requires"


def parse_pins(path):
    pins = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9A-Za-z.+!_-]+)", line)
            if not m:
                fail(2, f"{path}:{n}: not a NAME==VERSION pin: {line}")
            pins[norm(m.group(1))] = m.group(2)
    return pins


def check_pin(req, version):
    """A message when the pinned version does not satisfy req (None when it does or when
    packaging is not there to tell)."""
    try:
        from packaging.requirements import InvalidRequirement, Requirement
    except ImportError:
        return None
    try:
        parsed = Requirement(req)
    except InvalidRequirement:
        return None
    if parsed.marker is not None and not parsed.marker.evaluate():
        return None
    if parsed.specifier and not parsed.specifier.contains(version, prereleases=True):
        return f"{req!r} is not satisfied by the pin {parsed.name}=={version}"
    return None


def main(argv):
    args = argv[1:]
    if not args or args[0].startswith("-"):
        fail(2, "usage: build_requires.py SRC_DIR [--pins FILE] [--exclude NAME]... [--allow-unpinned]")
    src, pins_file, excluded, allow = args[0], None, set(), False
    i = 1
    while i < len(args):
        if args[i] == "--pins" and i + 1 < len(args):
            pins_file, i = args[i + 1], i + 2
        elif args[i] == "--exclude" and i + 1 < len(args):
            excluded.add(norm(args[i + 1]))
            i += 2
        elif args[i] == "--allow-unpinned":
            allow, i = True, i + 1
        else:
            fail(2, f"unknown argument: {args[i]}")
    reqs, origin = read_requires(src)
    print(f"build_requires: {origin}", file=sys.stderr)
    pins = parse_pins(pins_file) if pins_file else None
    problems = []
    for req in reqs:
        m = NAME.match(req)
        if not m:
            fail(2, f"{origin}: not a requirement: {req!r}")
        name = norm(m.group(1))
        if name in excluded:
            print(f"build_requires: {req!r} left out (provided by the venv or the distro)", file=sys.stderr)
            continue
        if pins is not None:
            if name not in pins:
                problems.append(f"{req!r} has no pin in {pins_file}: add {name}==<version>")
            else:
                why = check_pin(req, pins[name])
                if why:
                    problems.append(f"{why}: change the pin in {pins_file}")
        print(req)
    if problems:
        for p in problems:
            print(f"build_requires: {'warning: ' if allow else ''}{p}", file=sys.stderr)
        if not allow:
            sys.exit(3)


if __name__ == "__main__":
    main(sys.argv)

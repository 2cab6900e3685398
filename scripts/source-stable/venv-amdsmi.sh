#!/bin/sh
# shellcheck source-path=SCRIPTDIR
# venv-amdsmi.sh [ROOT]: make the distribution's amdsmi importable by the active venv's
# python, then import it. vLLM detects ROCm only through `import amdsmi` (docs/facts.md), and
# PyPI's amdsmi is left out of the build requirements (a ctypes wrapper around a library
# nothing installs here). Fedora's amdsmi rpm moves the Python package, with its own
# libamd_smi.so inside, out of share/amd_smi into the SYSTEM Python's site-packages (Fedora
# amdsmi.spec %install: /usr/lib/python%{python3_version}/site-packages/amdsmi), which a
# python3.12 venv does not see; so the package is copied into the venv's site-packages.
# Runs inside the image build (POSIX sh); ROOT (tests) stands in for / when looking for the
# package. Exit 1 with the reason when there is no package or it does not import.
set -eu
root=${1:-}
src=''
for d in "$root"/usr/lib/python3*/site-packages/amdsmi "$root"/usr/lib64/python3*/site-packages/amdsmi; do
  [ -f "$d/__init__.py" ] && src=$d
done
if [ -z "$src" ]; then
  echo "error: no amdsmi Python package under $root/usr/lib*/python3*/site-packages: install Fedora's amdsmi package (dnf install amdsmi); without it vLLM finds no ROCm platform" >&2
  exit 1
fi
site=$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
rm -rf "$site/amdsmi"
cp -a "$src" "$site/amdsmi"
echo "amdsmi: copied $src into $site"
python -c 'import amdsmi, os; print("amdsmi imports in the venv from", os.path.dirname(amdsmi.__file__))' || {
  echo "error: amdsmi from $src does not import in $(python -c 'import sys; print(sys.prefix)') (the lines above): vLLM would find no ROCm platform" >&2
  exit 1
}

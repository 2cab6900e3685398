"""A PEP 517 build backend with no dependencies, so the wheel-cache tests of
therock-toolbox.bats build a real wheel with `pip wheel --no-build-isolation` offline."""

import base64
import hashlib
import os
import zipfile

NAME, VERSION = "hfdemo", os.environ.get("HFDEMO_VERSION", "1.0")


def _record(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = f"{NAME}-{VERSION}-py3-none-any.whl"
    info = f"{NAME}-{VERSION}.dist-info"
    with open(f"{NAME}/__init__.py", "rb") as f:
        files = {f"{NAME}/__init__.py": f.read()}
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n".encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: hfdemo\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = [_record(p, d) for p, d in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
    return name

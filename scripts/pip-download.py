#!/usr/bin/env python3
"""`pip download --no-deps` with progress that reads well in a CI log: one line per wheel when
its download starts (name and size), then a line at every tenth of it (and at least every 30
seconds), then one when it is done, instead of pip's redrawn bar or nothing (--quiet).
Without network, one line says so instead of pip's retries.
scripts/fetch-cccl.sh (three wheels, about 7 MB) and scripts/check-torch-backend.sh (the torch
wheel, about 530 MB) fetch through it. On failure it prints pip's output and exits with pip's
status.

    scripts/pip-download.py DEST SPEC...     e.g. scripts/pip-download.py build/w "torch==2.11.0"
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import threading
import time

UNITS = {"bytes": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}
# What pip says when there is no network to reach PyPI through.
NETWORK = re.compile(r"Temporary failure in name resolution|Name or service not known|Network is unreachable|"
                     r"Connection refused|No route to host")
EVERY_SECONDS = 30


def mb(size):
    return f"{size / 1e6:.0f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"


def size_in(folder, name):
    """Bytes of `name` written so far somewhere under `folder` (pip's temporary download)."""
    found = 0
    for path in pathlib.Path(folder).rglob(name):
        try:
            found = max(found, path.stat().st_size)
        except OSError:
            pass
    return found


def watch(folder, name, total, done):
    """Prints a line at every tenth of `total` bytes, and at least every EVERY_SECONDS."""
    start = last_line = time.monotonic()
    tenths = 0
    while not done.wait(1):
        now, got = time.monotonic(), size_in(folder, name)
        reached = min(9, int(10 * got / total)) if total else 0
        if reached > tenths or now - last_line >= EVERY_SECONDS:
            tenths = max(tenths, reached)
            print(f"  {name.split('-')[0]}: {100 * got / total:.0f}% ({mb(got)} of {mb(total)}, "
                  f"{now - start:.0f} s)", flush=True)
            last_line = now


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.strip().split("\n\n")[-1].strip())
    dest, specs = sys.argv[1], sys.argv[2:]
    with tempfile.TemporaryDirectory(prefix="pip-download-") as scratch:
        # pip writes a download into a folder under TMPDIR before it moves it to --dest.
        env = dict(os.environ, TMPDIR=scratch, PIP_DISABLE_PIP_VERSION_CHECK="1")
        pip = subprocess.Popen(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--progress-bar", "off",
             "--dest", dest, *specs],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        output, watcher, done, started = [], None, threading.Event(), time.monotonic()
        for line in pip.stdout:
            output.append(line)
            downloading = re.match(r"\s*Downloading (\S+) \(([\d.]+) (bytes|kB|MB|GB)\)", line)
            cached = re.match(r"\s*(?:Using cached|File was already downloaded) (\S+)", line)
            if downloading or cached:
                if watcher:
                    done.set()
                    watcher.join()
                    done = threading.Event()
                    watcher = None
            if downloading:
                name = downloading.group(1).rsplit("/", 1)[-1]
                total = float(downloading.group(2)) * UNITS[downloading.group(3)]
                print(f"downloading {name} ({mb(total)}) with pip", flush=True)
                watcher = threading.Thread(target=watch, args=(scratch, name, total, done),
                                           daemon=True)
                watcher.start()
            elif cached:
                print(f"{cached.group(1).rsplit('/', 1)[-1]}: from pip's cache", flush=True)
        status = pip.wait()
        done.set()
        if watcher:
            watcher.join()
    if status != 0:
        unreachable = next((line for line in output if NETWORK.search(line)), None)
        if unreachable:
            # No network: one line, not pip's retries and tracebacks.
            why = NETWORK.search(unreachable).group(0)
            print(f"could not download {' '.join(specs)}: PyPI could not be reached ({why})", file=sys.stderr)
        else:
            sys.stderr.write("".join(output))
            print(f"pip download {' '.join(specs)} failed ({status})", file=sys.stderr)
        return status
    print(f"downloaded {' '.join(specs)} into {dest} in {time.monotonic() - started:.0f} s",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

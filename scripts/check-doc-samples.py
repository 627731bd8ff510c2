#!/usr/bin/env python3
"""Compiles and runs the code samples of README.md and the book (docs/src), on a simulated
device, so that what the docs show is what the library does.

Every fenced block in C, C++, Python, Fortran or shell carries a word after its language that
says what to do with it (a block without one is an error, so that no sample escapes):

    ```c run         a whole C program: built with -Wall -Wextra -Werror against include/ and
                     librmm.so, run; it must exit 0
    ```c body        statements of a function answering rmmError_t (RMM_TRY works; `stream`
                     is the default stream): wrapped into a program, built and run like one
    ```cpp run       a whole C++17 program over include/rmm.hpp (g++), built and run
    ```python run    run with python3, the package python/rmm_rs/ and RMM_RS_LIBRARY set
    ```fortran run   a whole program using include/rmm.f90 (gfortran), built and run
    ```sh run        run with bash -euo pipefail; $PREFIX is an install prefix laid out as
                     cmake --install lays it out (lib/, include/, bin/rmm-replay)
    ```LANG nocheck  not run here, because it needs what CI lacks (nvcc, a GPU, CCCL, a
                     framework) or only shows a command line; the GPU test suites cover these

A `run` sample may add `as=FILE` (```c run as=app.c): the text after the block then gives, as
the first inline code span naming FILE, the reader's own command line (`cc app.c -o app ...
&& ./app`). Besides the usual build and run, the sample is saved as FILE and that line runs as
written, with bash: once on the simulated device, where it must exit 0, and once more without
RMM_SIM_DEVICES, where it must exit 0 (a GPU) or fail saying why, naming RMM_SIM_DEVICES.

Each sample runs in a directory of its own with RMM_SIM_DEVICES=1 (a sample may set its own),
and a failing one prints its file, line, command and output. Needs target/release/librmm.so,
librmm_preload.so and rmm-replay (cargo build --release --workspace --bins --lib).

    scripts/check-doc-samples.py                  every sample
    scripts/check-doc-samples.py docs/src/ff.md   the samples of some files
    scripts/check-doc-samples.py --list           list the samples, run nothing
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGET = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release"
LANGUAGES = {"c", "cpp", "python", "fortran", "sh"}
ACTIONS = {"run", "body", "nocheck"}
TIMEOUT = 120
WARNINGS = ["-Wall", "-Wextra", "-Werror"]

C_BODY = """#include <rmm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rmmError_t sample(void) {{
  cudaStream_t stream = NULL; /* the default stream */
  (void)stream;
#line {line} "{path}"
{body}
  return RMM_SUCCESS;
}}

int main(void) {{
  rmmError_t status = sample();
  if (status != RMM_SUCCESS) {{
    fprintf(stderr, "%s: %s\\n", rmmGetErrorName(status), rmmGetLastErrorMessage());
    return 1;
  }}
  return 0;
}}
"""


@dataclass
class Sample:
    path: pathlib.Path
    line: int  # of the first line of code
    language: str
    action: str
    code: str
    save_as: str = ""  # as=FILE: the name the reader saves it under
    command: str = ""  # the reader's command line naming that file, from the text after it

    def where(self):
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def markdown_files(arguments):
    if arguments:
        return [pathlib.Path(a).resolve() for a in arguments]
    book = ROOT / "docs" / "src"
    # The API pages are generated from rmm.h and hold declarations, not samples.
    return [ROOT / "README.md"] + sorted(p for p in book.rglob("*.md")
                                         if (book / "api") not in p.parents)


def command_naming(name, lines):
    """The first inline code span in `lines` (up to the next fenced block) that is a command
    with `name` as one of its words."""
    text = []
    for line in lines:
        if re.match(r"^\s*(```|~~~)", line):
            break
        text.append(line)
    for span in re.findall(r"`([^`]+)`", " ".join(text)):
        words = span.split()
        if len(words) > 1 and name in words:  # a command, not the name alone
            return " ".join(words)
    return ""


def samples_of(path):
    """The fenced blocks of a markdown file with a checked language, and problems found."""
    samples, problems = [], []
    lines = path.read_text().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)(```+|~~~+)\s*([\w+-]*)(.*)$", lines[i])
        if not m:
            i += 1
            continue
        indent, fence, language, rest = m.groups()
        start = i + 1
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            i += 1
        code = "\n".join(line[len(indent):] if line.startswith(indent) else line
                         for line in lines[start:i])
        i += 1
        if language not in LANGUAGES:
            continue
        words = rest.replace(",", " ").split()
        actions = [w for w in words if w in ACTIONS]
        where = f"{path.relative_to(ROOT)}:{start}"
        if len(actions) != 1:
            problems.append(f"{where}: a ```{language} block needs one of "
                            f"{', '.join(sorted(ACTIONS))} after its language")
            continue
        if actions[0] == "body" and language != "c":
            problems.append(f"{where}: only C samples can be a body")
            continue
        save_as = next((w[3:] for w in words if w.startswith("as=")), "")
        command = command_naming(save_as, lines[i:]) if save_as else ""
        if save_as and (actions[0] != "run" or "./" not in command):
            problems.append(f"{where}: as={save_as} needs a run sample followed by a command "
                            f"line naming {save_as} and running what it builds (./...) in an "
                            f"inline code span")
            continue
        samples.append(Sample(path, start + 1, language, actions[0], code + "\n", save_as,
                              command))
    return samples, problems


def fake_prefix(directory):
    """An install prefix as cmake --install lays it out, made of links to the build."""
    prefix = directory / "prefix"
    (prefix / "lib").mkdir(parents=True)
    (prefix / "bin").mkdir()
    for name in ("librmm.so", "librmm.a", "librmm_preload.so"):
        (prefix / "lib" / name).symlink_to(TARGET / name)
    (prefix / "bin" / "rmm-replay").symlink_to(TARGET / "rmm-replay")
    (prefix / "include").symlink_to(ROOT / "include")
    return prefix


def commands(sample, work, prefix):
    """The shell commands that build and run a sample in `work`."""
    link = ["-L", str(prefix / "lib"), f"-Wl,-rpath,{prefix / 'lib'}", "-lrmm"]
    include = ["-I", str(prefix / "include")]
    if sample.language == "c":
        source = work / "sample.c"
        if sample.action == "body":
            source.write_text(C_BODY.format(line=sample.line, path=sample.where().split(":")[0],
                                            body=sample.code))
        else:
            source.write_text(f'#line {sample.line} "{sample.where().split(":")[0]}"\n'
                              + sample.code)
        return [["cc", "-std=c11", *WARNINGS, *include, str(source), *link, "-o", "sample"],
                ["./sample"]]
    if sample.language == "cpp":
        (work / "sample.cpp").write_text(sample.code)
        return [["c++", "-std=c++17", *WARNINGS, *include, "sample.cpp", *link, "-o", "sample"],
                ["./sample"]]
    if sample.language == "fortran":
        (work / "sample.f90").write_text(sample.code)
        return [["gfortran", "-c", str(ROOT / "include" / "rmm.f90")],
                ["gfortran", *WARNINGS, "-Wno-unused-dummy-argument", "sample.f90", "rmm.o",
                 *link, "-o", "sample"],
                ["./sample"]]
    if sample.language == "python":
        (work / "sample.py").write_text(sample.code)
        return [[sys.executable, "sample.py"]]
    (work / "sample.sh").write_text(sample.code)
    return [["bash", "-euo", "pipefail", "sample.sh"]]


def as_written(sample, work, env):
    """Runs an as=FILE sample's own command line as written: on the simulated device it must
    succeed; without RMM_SIM_DEVICES it must succeed (a GPU) or fail naming RMM_SIM_DEVICES."""
    (work / sample.save_as).write_text(sample.code)
    no_devices = {k: v for k, v in env.items() if k != "RMM_SIM_DEVICES"}
    for how, environment in (("", env), (" without RMM_SIM_DEVICES", no_devices)):
        try:
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", sample.command], cwd=work,
                                  env=environment, capture_output=True, text=True,
                                  timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            return f"{sample.command}{how}: still running after {TIMEOUT} s"
        output = f"{done.stdout}{done.stderr}".rstrip()
        if done.returncode != 0 and (not how or "RMM_SIM_DEVICES" not in output):
            return (f"{sample.command}{how} exited with {done.returncode}"
                    f"{'' if not how else ' without saying why (RMM_SIM_DEVICES)'}\n{output}")
    return None


def run(sample, base):
    work = pathlib.Path(tempfile.mkdtemp(dir=base, prefix="sample-"))
    prefix = fake_prefix(work)
    env = dict(os.environ)
    env.update({
        "RMM_SIM_DEVICES": env.get("RMM_SIM_DEVICES", "1"),
        "RMM_RS_LIBRARY": str(TARGET / "librmm.so"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "python"),
                                                    env.get("PYTHONPATH")])),
        "PREFIX": str(prefix),
        "RMM_REPO": str(ROOT),
    })
    for command in commands(sample, work, prefix):
        try:
            done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True,
                                  timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            return f"{' '.join(command)}: still running after {TIMEOUT} s"
        if done.returncode != 0:
            return (f"{' '.join(command)} exited with {done.returncode}\n"
                    f"{done.stdout}{done.stderr}".rstrip())
    return as_written(sample, work, env) if sample.save_as else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    samples, problems = [], []
    for path in markdown_files(args.files):
        found, wrong = samples_of(path)
        samples += found
        problems += wrong
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        return 1
    checked = [s for s in samples if s.action != "nocheck"]
    if args.list:
        for s in samples:
            print(f"{s.where()}: {s.language} {s.action}"
                  + (f", then as written: {s.command}" if s.command else ""))
        return 0
    missing = [p for p in ("librmm.so", "librmm_preload.so", "rmm-replay")
               if not (TARGET / p).exists()]
    if missing:
        print(f"error: {', '.join(missing)} not in {TARGET}: run cargo build --release "
              f"--workspace --bins --lib first", file=sys.stderr)
        return 1
    base = pathlib.Path(tempfile.mkdtemp(prefix="rmm-doc-samples-"))
    failed = 0
    try:
        for s in checked:
            error = run(s, base)
            if error:
                failed += 1
                print(f"FAILED {s.where()} ({s.language} {s.action}):\n{error}\n", file=sys.stderr)
            else:
                print(f"ok     {s.where()} ({s.language} {s.action})")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    skipped = len(samples) - len(checked)
    print(f"{len(checked) - failed} of {len(checked)} samples passed; {skipped} marked nocheck")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

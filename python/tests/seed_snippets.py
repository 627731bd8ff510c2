"""The Python snippets of the seed documents (shared/seeds/ beside the repository): RMM's Python
user guide (001), its 2019 README with ``librmm_cffi`` (002) and the programming guide's Python
tabs (003), kept verbatim in seed_snippets.txt beside this file, as cxx_tests/seed_guide/ keeps
the C++ tabs. test_seed_snippets.py runs them; when the seeds are there it also checks that the
file still holds exactly what they show.

    python3 python/tests/seed_snippets.py --write   # rewrite seed_snippets.txt from the seeds
    python3 python/tests/seed_snippets.py --check   # exit 1 when it differs from them
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import textwrap
from dataclasses import dataclass
from typing import List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
SNIPPETS = os.path.join(HERE, "seed_snippets.txt")
# shared/ lies beside the repository (CI's clone and the developers' worktrees alike).
SEEDS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "..", "shared", "seeds")
SEED_FILES = {"001": "001_4ceb09c4972f5bcf.txt", "002": "002_9f796d1186d27ee4.txt", "003": "003_0f306e1fe9c1a347.txt"}

BEGIN = re.compile(r'^---- BEGIN seed snippet (?P<seed>\S+):(?P<line>\d+) (?P<lang>\w+) "(?P<section>[^"]*)" ----$')
END = "---- END seed snippet ----"


@dataclass
class Snippet:
    seed: str  # the seed file's name
    line: int  # the line of the snippet's first line of code in it
    lang: str  # python or bash
    section: str  # the headings above it
    code: str  # the code as the seed has it, its common indentation removed

    @property
    def name(self) -> str:
        words = re.sub(r"[^a-z0-9]+", "_", self.section.lower()).strip("_")
        return f"{self.seed[:3]}_line{self.line}_{words}"[:80]


def extract(seed: str, text: str) -> List[Snippet]:
    """The Python (and shell) snippets of one seed: fenced ```python / ```bash blocks, the
    Python tabs (````{code-tab} python) and, in 002, whose blocks carry no language, the blocks
    of its Python section."""
    lines = text.split("\n")
    snippets = []
    headings: List[str] = []
    in_python_section = False
    containers: List[str] = []  # the fences of open {tabs} groups
    i = 0
    while i < len(lines):
        line = lines[i]
        heading = re.match(r"^(#+) (.*)$", line)
        if heading:
            level = len(heading.group(1))
            headings = headings[: level - 1] + [heading.group(2).strip()]
            in_python_section = "Python" in heading.group(2) and level == 2 or (in_python_section and level > 2)
        fence = re.match(r"^(\s*)(`{3,})\s*(.*?)\s*$", line)
        if fence and fence.group(3) == "{tabs}":
            containers.append(fence.group(2))
            i += 1
            continue
        if fence and fence.group(3) == "" and containers and fence.group(2) == containers[-1]:
            containers.pop()
            i += 1
            continue
        if fence:
            ticks, info = fence.group(2), fence.group(3)
            lang = re.sub(r"^\{code-tab\}\s*", "", info).lower()
            body = []
            j = i + 1
            while j < len(lines) and not re.match(r"^\s*" + ticks + r"\s*$", lines[j]):
                body.append(lines[j])
                j += 1
            code_like_c = any(b.lstrip().startswith(("//", "#include", "thrust::", "RMM_", "CUDA_TRY")) for b in body)
            wanted = lang in ("python", "bash") or (lang == "" and seed.startswith("002") and in_python_section
                                                     and not code_like_c)
            if wanted:
                code = textwrap.dedent("\n".join(body)).strip("\n")
                section = " / ".join(h for h in headings[1:] if h) or headings[0]
                snippets.append(Snippet(seed, i + 2, lang or "python", section, code))
            i = j + 1
            continue
        i += 1
    return snippets


def from_seeds(folder: str = SEEDS) -> Optional[List[Snippet]]:
    """Every snippet of the seeds, or None when the seeds are not there."""
    found = []
    for name in SEED_FILES.values():
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as f:
            found += extract(name, f.read())
    return found


def render(snippets: List[Snippet]) -> str:
    out = ["# The Python and shell snippets of shared/seeds/001, 002 and 003, verbatim (common indentation",
           "# removed), each with its seed file and line. Written by seed_snippets.py --write; read by",
           "# test_seed_snippets.py.", ""]
    for s in snippets:
        out.append(f'---- BEGIN seed snippet {s.seed}:{s.line} {s.lang} "{s.section}" ----')
        out.append(s.code)
        out.append(END)
        out.append("")
    return "\n".join(out)


def load(path: str = SNIPPETS) -> List[Snippet]:
    """The committed snippets."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    snippets = []
    i = 0
    while i < len(lines):
        begin = BEGIN.match(lines[i])
        if begin:
            body = []
            i += 1
            while lines[i] != END:
                body.append(lines[i])
                i += 1
            snippets.append(Snippet(begin.group("seed"), int(begin.group("line")), begin.group("lang"),
                                    begin.group("section"), "\n".join(body)))
        i += 1
    return snippets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    found = from_seeds()
    if found is None:
        print(f"the seeds are not at {os.path.normpath(SEEDS)}", file=sys.stderr)
        return 2
    text = render(found)
    if args.write:
        with open(SNIPPETS, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {len(found)} snippets to {SNIPPETS}")
        return 0
    with open(SNIPPETS, encoding="utf-8") as f:
        same = f.read() == text
    print(f"{SNIPPETS}: {'the same as' if same else 'NOT what'} the seeds hold ({len(found)} snippets)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

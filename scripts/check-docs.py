#!/usr/bin/env python3
"""Checks that no link of the built book, or of README.md, is broken.

In the HTML that mdbook wrote (docs/book by default) every relative link (href and src) must
name a file that exists, and every #fragment an id in the page it points to. In README.md every
relative link must name a file of the repository, and every #fragment a heading of the file it
points to (GitHub's heading anchors). Links to other sites are not followed (CI has no network
to spare for them). Python's standard library only.

It also checks what a newcomer meets first (`first_hour`): the README links every guide of
its way in, gives the test command's expected time, and no install example writes where only
root may (/opt) or into the `build/` folder the tests fill.

    scripts/check-docs.py [BOOK_DIR]
"""
import html.parser
import pathlib
import re
import sys
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parent.parent


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.links = []  # (line, url)
        self.base = None  # <base href>: mdBook's 404 page has one (its site-url)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "base" and attrs.get("href") is not None:
            self.base = attrs["href"]
            return
        for name in ("id", "name") if tag == "a" else ("id",):
            if attrs.get(name):
                self.ids.add(attrs[name])
        for name in ("href", "src"):
            if attrs.get(name) is not None:
                self.links.append((self.getpos()[0], attrs[name]))


def external(url):
    return re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", url) is not None or url.startswith("//")


def parse(path, cache):
    if path not in cache:
        page = Page()
        page.feed(path.read_text(errors="replace"))
        cache[path] = page
    return cache[path]


def check_book(book):
    cache, problems, count = {}, [], 0
    for path in sorted(book.rglob("*.html")):
        page = parse(path, cache)
        for line, url in page.links:
            if external(url) or not url:
                continue
            count += 1
            parts = urllib.parse.urlsplit(url)
            folder = path.parent
            if page.base is not None:  # a site-relative base: the book is the site's root
                folder = book / page.base.lstrip("/")
            if parts.path.startswith("/"):
                target = book / urllib.parse.unquote(parts.path).lstrip("/")
            elif parts.path:
                target = folder / urllib.parse.unquote(parts.path)
            else:
                target = path
            target = target.resolve()
            where = f"{path.relative_to(book)}:{line}: {url}"
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                problems.append(f"{where}: no such file")
                continue
            if parts.fragment and target.suffix == ".html":
                if urllib.parse.unquote(parts.fragment) not in parse(target, cache).ids:
                    problems.append(f"{where}: no id {parts.fragment!r} in "
                                    f"{target.relative_to(book.resolve())}")
    return problems, count


def github_anchors(markdown):
    """The anchors GitHub gives the headings of a markdown file."""
    anchors, seen = set(), {}
    fenced = False
    for line in markdown.split("\n"):
        if re.match(r"^\s*(```|~~~)", line):
            fenced = not fenced
        m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def check_markdown(path):
    problems, count = [], 0
    text = path.read_text()
    without_code = re.sub(r"```.*?```", "", text, flags=re.S)
    without_code = re.sub(r"`[^`\n]*`", "", without_code)
    for m in re.finditer(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", without_code):
        url = m.group(1)
        if external(url):
            continue
        count += 1
        parts = urllib.parse.urlsplit(url)
        target = (path.parent / parts.path).resolve() if parts.path else path
        where = f"{path.relative_to(ROOT)}: {url}"
        if not target.exists():
            problems.append(f"{where}: no such file")
        elif parts.fragment and target.suffix == ".md":
            if parts.fragment not in github_anchors(target.read_text()):
                problems.append(f"{where}: no heading with the anchor {parts.fragment!r}")
    return problems, count


def first_hour():
    """What a new user meets in the README and the install guide, checked as prose cannot be."""
    problems = []
    readme = (ROOT / "README.md").read_text()
    for guide in ("docs/src/python.md", "docs/src/frameworks.md", "docs/src/preload.md", "docs/src/sleep.md"):
        if f"]({guide}" not in readme:
            problems.append(f"README.md: no link to {guide}")
    if not re.search(r"scripts/test\.sh[^\n]*\n?[^\n]*takes about \d+ minutes", readme):
        problems.append("README.md: the test command's expected time (\"takes about N minutes\") is not given")
    for path in [ROOT / "README.md", *sorted((ROOT / "docs" / "src").glob("*.md"))]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "/opt/" in line or re.search(r"-B build(\s|$)|--install build(\s|$)", line):
                problems.append(f"{path.relative_to(ROOT)}:{number}: an install example writes to /opt or into build/ itself")
    return problems


def main():
    book = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "docs" / "book").resolve()
    if not (book / "index.html").exists():
        print(f"error: {book} holds no built book (run mdbook build docs)", file=sys.stderr)
        return 1
    problems, book_links = check_book(book)
    readme_problems, readme_links = check_markdown(ROOT / "README.md")
    problems += readme_problems
    for problem in problems:
        print(f"broken link: {problem}")
    newcomer = first_hour()
    for problem in newcomer:
        print(f"first hour: {problem}")
    problems += newcomer
    print(f"{book_links} relative links in the book, {readme_links} in README.md: "
          f"{len(problems)} broken")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

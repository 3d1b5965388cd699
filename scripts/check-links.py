#!/usr/bin/env python3
"""Checks every link of a built mdBook (the HTML in DIR, default docs/book/book).

A relative link must name a file of the build, and its #anchor an id in that file; a link to the
page itself (#anchor) an id of the page. External links are not fetched (CI may have no network)
but must be https. print.html (every chapter on one page, whose links mdBook rewrites) and the
theme's own files are skipped. Exit 1 with a line per broken link, else 0.

    python3 scripts/check-links.py [DIR]
"""

import html.parser
import os
import sys
import urllib.parse

SKIP_PAGES = {"print.html", "404.html", "toc.html"}


class Page(html.parser.HTMLParser):
    """The ids and the link targets (href of <a>) of one HTML file."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.links = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        if tag == "a" and attrs.get("href") is not None:
            self.links.append(attrs["href"])


def parse(path):
    page = Page()
    with open(path, encoding="utf-8") as f:
        page.feed(f.read())
    return page


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "docs/book/book")
    if not os.path.isfile(os.path.join(root, "index.html")):
        print(f"check-links: {root} holds no built book (run mdbook build first)", file=sys.stderr)
        return 1
    pages = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            if name.endswith(".html"):
                path = os.path.join(dirpath, name)
                pages[path] = parse(path)
    broken = []
    checked = 0
    for path, page in sorted(pages.items()):
        if os.path.basename(path) in SKIP_PAGES:
            continue
        rel_page = os.path.relpath(path, root)
        for href in page.links:
            checked += 1
            url = urllib.parse.urlsplit(href)
            if url.scheme in ("http", "https", "mailto") or href.startswith("//"):
                if url.scheme != "https" and url.scheme != "mailto":
                    broken.append(f"{rel_page}: {href}: external links must be https")
                continue
            if url.scheme:
                broken.append(f"{rel_page}: {href}: unknown scheme")
                continue
            target = path
            if url.path:
                target = os.path.normpath(os.path.join(os.path.dirname(path), urllib.parse.unquote(url.path)))
                if os.path.isdir(target):
                    target = os.path.join(target, "index.html")
                if not os.path.exists(target):
                    broken.append(f"{rel_page}: {href}: no such file in the book")
                    continue
            if url.fragment:
                ids = pages[target].ids if target in pages else None
                if ids is not None and urllib.parse.unquote(url.fragment) not in ids:
                    broken.append(f"{rel_page}: {href}: no anchor #{url.fragment} in {os.path.relpath(target, root)}")
    for line in broken:
        print(f"check-links: {line}", file=sys.stderr)
    print(f"check-links: {checked} links in {len(pages)} pages, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())

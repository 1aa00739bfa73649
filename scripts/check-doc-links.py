#!/usr/bin/env python3
"""Check the internal links of a generated HTML tree (the Doxygen output of `make docs`).

    scripts/check-doc-links.py DIR

Every page under DIR (*.html, recursively) is parsed; every href and src that is not external
(a URL with a scheme such as http:, https:, mailto: or javascript:, or one starting with //) must
name a file that exists under DIR, and a #fragment on a local HTML page must name an id (or an
<a name>) of that page. A link to a folder counts only if the folder has an index.html. A link
that leaves DIR is broken: the published docs are DIR and nothing else.

Prints each broken link as `page: href` (page relative to DIR) and exits 1 if there is any;
otherwise prints one line with the pages scanned and the links checked, and exits 0. Exit 2 for
a DIR that is not a folder. Python 3 standard library only.
"""
import html.parser
import os
import sys
import urllib.parse

LINK_ATTRS = ("href", "src")


class Page(html.parser.HTMLParser):
    """One HTML file: the links it carries and the anchors it defines."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links = []
        self.anchors = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name in LINK_ATTRS:
                self.links.append(value.strip())
            elif name == "id" or (name == "name" and tag == "a"):
                self.anchors.add(value)

    handle_startendtag = handle_starttag


def is_external(url):
    parts = urllib.parse.urlsplit(url)
    return bool(parts.scheme) or bool(parts.netloc) or url.startswith("//")


class Checker:
    def __init__(self, root):
        self.root = os.path.realpath(root)
        self.pages = {}

    def page(self, path):
        """The parsed page at absolute path `path` (cached)."""
        if path not in self.pages:
            parser = Page()
            with open(path, encoding="utf-8", errors="replace") as f:
                parser.feed(f.read())
            parser.close()
            self.pages[path] = parser
        return self.pages[path]

    def broken(self, page_path, url):
        """Why `url` on the page at `page_path` is broken, or None when it resolves."""
        parts = urllib.parse.urlsplit(url)
        target_rel = urllib.parse.unquote(parts.path)
        if target_rel:
            target = os.path.normpath(os.path.join(os.path.dirname(page_path), target_rel))
        else:
            target = page_path
        real = os.path.realpath(target)
        if real != self.root and not real.startswith(self.root + os.sep):
            return "outside the docs"
        if os.path.isdir(real):
            real = os.path.join(real, "index.html")
        if not os.path.isfile(real):
            return "no such file"
        fragment = urllib.parse.unquote(parts.fragment)
        if fragment and real.endswith((".html", ".htm")):
            if fragment not in self.page(real).anchors:
                return "no such anchor"
        return None

    def run(self):
        html_files = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith((".html", ".htm")):
                    html_files.append(os.path.join(dirpath, name))
        checked = 0
        bad = []
        for path in html_files:
            rel = os.path.relpath(path, self.root)
            for url in self.page(path).links:
                if not url or is_external(url):
                    continue
                checked += 1
                if self.broken(path, url) is not None:
                    bad.append(f"{rel}: {url}")
        return len(html_files), checked, bad


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    root = argv[1]
    if not os.path.isdir(root):
        print(f"check-doc-links: {root}: not a folder", file=sys.stderr)
        return 2
    pages, checked, bad = Checker(root).run()
    for line in bad:
        print(line)
    if bad:
        print(f"check-doc-links: {len(bad)} broken link(s) in {root}", file=sys.stderr)
        return 1
    print(f"check-doc-links: {pages} pages scanned, {checked} internal links checked, none broken")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""No placeholder web addresses where users meet the project: the app's sources (the About
window), data/, the Flatpak manifest and the README. The project has no public address yet,
so every address there must be one of the real third-party sources listed below.

Usage: check-project-urls.py SOURCE_ROOT
"""
import pathlib
import re
import sys

# Addresses known to be real: the Flatpak manifest's sources, and the XML namespace a
# shared-mime-info file must declare (a name, not a link users follow).
REAL = (
    "https://github.com/axboe/liburing/",
    "https://github.com/mity/md4c.git",
    "http://www.freedesktop.org/standards/shared-mime-info",
)
# A scheme, then a host with a dot: "http://" alone (a prefix being tested) is not an address.
URL = re.compile(r"https?://[A-Za-z0-9-]+\.[A-Za-z0-9.-]+[^\s\"'<>)]*")


def files(root):
    for pattern in ("src/**/*.c", "src/**/*.h", "src/**/*.ui", "data/*.in", "data/*.xml",
                    "flatpak/*.json", "README.md"):
        yield from sorted(root.glob(pattern))


def main():
    root = pathlib.Path(sys.argv[1])
    problems = []
    count = 0
    for path in files(root):
        count += 1
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for url in URL.findall(line):
                if not url.startswith(REAL):
                    problems.append(f"{path.relative_to(root)}:{n}: {url} is not a real "
                                    "project address (there is none yet: leave it out)")
    for p in problems:
        print(p)
    if not problems:
        print(f"{count} files: no placeholder addresses")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

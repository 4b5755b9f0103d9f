#!/usr/bin/env python3
"""unmarked-strings.py can fail: on the planted files it reports exactly the lines marked
"/* planted */" or "<!-- planted -->" and exits 1.

Usage: check-planted.py SCANNER SOURCE_ROOT PLANTED_FILE...
"""
import re
import subprocess
import sys


def main():
    scanner, root, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    want = set()
    for path in files:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.rstrip().endswith(("/* planted */", "<!-- planted -->")):
                    want.add((path, n))
    run = subprocess.run([sys.executable, scanner, root] + files,
                         capture_output=True, text=True)
    got = set()
    for line in run.stdout.splitlines():
        m = re.match(r"(.+?):(\d+): ", line)
        if m:
            reported = next((p for p in files if p.endswith(m.group(1))), m.group(1))
            got.add((reported, int(m.group(2))))
    ok = True
    if run.returncode != 1:
        print(f"the scanner exited {run.returncode} on planted strings, not 1")
        ok = False
    for path, n in sorted(want - got):
        print(f"{path}:{n}: planted unmarked string not reported")
        ok = False
    for path, n in sorted(got - want):
        print(f"{path}:{n}: reported, but nothing is planted there")
        ok = False
    if ok:
        print(f"all {len(want)} planted strings reported, nothing else")
    else:
        print(run.stdout, run.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Every icon-only button in the app's .ui files has a tooltip and an accessible label.

Usage: check-ui-accessibility.py FILE.ui...
"""
import sys
import xml.etree.ElementTree as ET

BUTTONS = {"GtkButton", "GtkMenuButton", "GtkToggleButton"}


def props(obj):
    return {p.get("name"): p for p in obj.findall("property")}


def check(path):
    problems = []
    for obj in ET.parse(path).iter("object"):
        if obj.get("class") not in BUTTONS:
            continue
        p = props(obj)
        if "icon-name" not in p or "label" in p:
            continue
        name = obj.get("id") or p["icon-name"].text
        if "tooltip-text" not in p:
            problems.append(f"{path}: icon-only button {name} has no tooltip-text")
        labels = [a for a in obj.findall("accessibility/property") if a.get("name") == "label"]
        if not labels:
            problems.append(f"{path}: icon-only button {name} has no accessible label")
    return problems


def main():
    problems = [msg for path in sys.argv[1:] for msg in check(path)]
    for msg in problems:
        print(msg)
    if not problems:
        print(f"{len(sys.argv) - 1} .ui files: every icon-only button is labelled")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

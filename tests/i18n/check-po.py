#!/usr/bin/env python3
"""The translations in po/ are valid, right about plurals and complete.

check: po/LINGUAS names exactly the po/*.po files; each passes msgfmt --check with no
untranslated or fuzzy message, and has its language's Plural-Forms header.
complete: each .po translates every message of a template extracted now from the files
in po/POTFILES.in, as po/meson.build extracts it (a string added to the app without its
translations fails here).

Usage: check-po.py check|complete SOURCE_ROOT MSGFMT XGETTEXT MSGCMP
"""
import pathlib
import re
import subprocess
import sys
import tempfile

# gettext's plural rules, as the GNOME translation teams use them.
PLURALS = {
    "de": "nplurals=2; plural=(n != 1);",
    "es": "nplurals=2; plural=(n != 1);",
    "fr": "nplurals=2; plural=(n > 1);",
    "it": "nplurals=2; plural=(n != 1);",
    "pt_BR": "nplurals=2; plural=(n > 1);",
    "zh_CN": "nplurals=1; plural=0;",
}
# meson's 'glib' gettext preset, plus po/meson.build's --add-comments=Translators.
XGETTEXT_ARGS = [
    "--from-code=UTF-8", "--add-comments=Translators",
    "--keyword=_", "--keyword=N_", "--keyword=C_:1c,2", "--keyword=NC_:1c,2",
    "--keyword=g_dcgettext:2", "--keyword=g_dngettext:2,3", "--keyword=g_dpgettext2:2c,3",
    "--flag=N_:1:pass-c-format", "--flag=C_:2:pass-c-format", "--flag=NC_:2:pass-c-format",
    "--flag=g_dngettext:2:pass-c-format", "--flag=g_strdup_printf:1:c-format",
    "--flag=g_string_printf:2:c-format", "--flag=g_string_append_printf:2:c-format",
    "--flag=g_error_new:3:c-format", "--flag=g_set_error:4:c-format",
]


def languages(root):
    text = (root / "po" / "LINGUAS").read_text(encoding="utf-8")
    return [w for line in text.splitlines() if not line.startswith("#") for w in line.split()]


def check(root, msgfmt):
    problems = []
    langs = languages(root)
    files = sorted(p.stem for p in (root / "po").glob("*.po"))
    if sorted(langs) != files:
        problems.append(f"po/LINGUAS lists {sorted(langs)}, po/ holds {files}")
    for lang in langs:
        before = len(problems)
        po = root / "po" / f"{lang}.po"
        run = subprocess.run([msgfmt, "--check", "--statistics", "-o", "/dev/null", str(po)],
                             capture_output=True, text=True)
        stats = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else ""
        if run.returncode != 0:
            problems.append(f"{po.name}: msgfmt --check failed:\n{run.stderr}")
        elif "untranslated" in stats or "fuzzy" in stats:
            problems.append(f"{po.name}: {stats}")
        header = re.search(r'"Plural-Forms: *([^"\\]*)', po.read_text(encoding="utf-8"))
        want = PLURALS.get(lang)
        if want is None:
            problems.append(f"{po.name}: no plural rule known for {lang}; add it to PLURALS")
        elif header is None or header.group(1).strip() != want:
            got = header.group(1) if header else "none"
            problems.append(f"{po.name}: Plural-Forms is {got!r}, {lang} needs {want!r}")
        if len(problems) == before:
            print(f"{po.name}: {stats}")
    return problems


def complete(root, xgettext, msgcmp):
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        pot = pathlib.Path(tmp) / "burrow.pot"
        run = subprocess.run([xgettext, *XGETTEXT_ARGS, f"--directory={root}",
                              f"--files-from={root / 'po' / 'POTFILES.in'}",
                              f"--output={pot}"], capture_output=True, text=True)
        if run.returncode != 0:
            return [f"xgettext failed:\n{run.stderr}"]
        for lang in languages(root):
            po = root / "po" / f"{lang}.po"
            run = subprocess.run([msgcmp, str(po), str(pot)], capture_output=True, text=True)
            if run.returncode != 0:
                problems.append(f"{po.name} lacks translations of the current sources "
                                f"(meson compile -C build burrow-update-po, then translate):\n"
                                + run.stderr)
            else:
                print(f"{po.name}: translates every message of the sources")
    return problems


def main():
    mode, root, msgfmt, xgettext, msgcmp = sys.argv[1:6]
    root = pathlib.Path(root)
    problems = check(root, msgfmt) if mode == "check" else complete(root, xgettext, msgcmp)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The Flatpak's meson configure succeeds with the manifest's own options, as flatpak-builder
runs it, on a PATH without flatpak-builder (the GNOME SDK has none), and the result builds
no tests and does not turn warnings into errors.

Usage: check-flatpak-configure.py MANIFEST SOURCE_ROOT
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

# What flatpak-builder passes to meson before a module's config-opts.
BUILDER_ARGS = ["--prefix=/app", "--libdir=lib", "--buildtype=release", "--wrap-mode=nodownload"]


def path_without(tmp, program):
    """A PATH of links to every program on the current PATH except `program`."""
    bindir = os.path.join(tmp, "bin")
    os.mkdir(bindir)
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            link = os.path.join(bindir, name)
            if name != program and not os.path.lexists(link):
                os.symlink(os.path.join(d, name), link)
    return bindir


def introspect(builddir, what):
    out = subprocess.run(["meson", "introspect", builddir, what], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    manifest_path, source_root = sys.argv[1:3]
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    module = manifest["modules"][-1]
    opts = module.get("config-opts", [])
    meson = shutil.which("meson")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PATH=path_without(tmp, "flatpak-builder"))
        builddir = os.path.join(tmp, "build")
        cmd = [meson, "setup", *BUILDER_ARGS, *opts, builddir, source_root]
        run = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if run.returncode != 0:
            print("meson setup with the manifest's options failed:", " ".join(cmd))
            print(run.stdout[-4000:], run.stderr[-4000:])
            return 1
        problems = []
        tests = introspect(builddir, "--tests")
        if tests:
            problems.append(f"the Flatpak build defines {len(tests)} tests, e.g. {tests[0]['name']}")
        options = {o["name"]: o["value"] for o in introspect(builddir, "--buildoptions")}
        if options.get("werror"):
            problems.append("the Flatpak build turns warnings into errors")
        if not options.get("app"):
            problems.append("the Flatpak build leaves out the app")
        for p in problems:
            print(p)
        if problems:
            return 1
        print("meson setup", " ".join(BUILDER_ARGS + opts), "succeeds without flatpak-builder")
        return 0


if __name__ == "__main__":
    sys.exit(main())

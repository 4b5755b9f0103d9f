#!/usr/bin/env python3
"""The Flatpak manifest, the metainfo and the desktop file agree on the app id and command.

Usage: check-flatpak.py MANIFEST METAINFO DESKTOP APP_ID
"""
import configparser
import json
import os
import sys
import xml.etree.ElementTree as ET


def main():
    manifest_path, metainfo_path, desktop_path, app_id = sys.argv[1:5]
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    metainfo = ET.parse(metainfo_path).getroot()
    desktop = configparser.RawConfigParser(interpolation=None)
    desktop.optionxform = str
    desktop.read(desktop_path, encoding="utf-8")
    entry = desktop["Desktop Entry"]

    problems = []

    def expect(what, got, want):
        if got != want:
            problems.append(f"{what}: {got!r}, expected {want!r}")

    expect("manifest id", manifest.get("id"), app_id)
    expect("manifest file name", os.path.basename(manifest_path), app_id + ".json")
    expect("manifest runtime", manifest.get("runtime"), "org.gnome.Platform")
    expect("manifest sdk", manifest.get("sdk"), "org.gnome.Sdk")
    expect("metainfo id", metainfo.findtext("id"), app_id)
    expect("metainfo launchable", metainfo.findtext("launchable"), app_id + ".desktop")
    expect("desktop file name", os.path.basename(desktop_path), app_id + ".desktop")
    expect("desktop Icon", entry.get("Icon"), app_id)

    command = manifest.get("command")
    expect("manifest command", command, "burrow")
    expect("desktop Exec command", (entry.get("Exec") or "").split()[0], command)
    expect("metainfo binary", metainfo.findtext("provides/binary"), command)

    modules = manifest.get("modules", [])
    last = modules[-1] if modules else {}
    expect("last module", last.get("name"), "burrow")
    expect("burrow buildsystem", last.get("buildsystem"), "meson")

    args = manifest.get("finish-args", [])
    for needed in ("--share=ipc", "--socket=wayland", "--socket=fallback-x11", "--device=dri"):
        if needed not in args:
            problems.append(f"finish-args lack {needed}")
    if "--share=network" in args:
        problems.append("finish-args share the network, which Burrow never needs")
    if not any(a.startswith("--filesystem=") for a in args):
        problems.append("finish-args give no access to model folders")

    for msg in problems:
        print(msg)
    if not problems:
        print(f"{app_id}: manifest, metainfo and desktop file agree; command {command}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

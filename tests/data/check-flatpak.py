#!/usr/bin/env python3
"""The Flatpak manifest, the metainfo and the desktop file agree on the app id and command;
the manifest uses a supported runtime and builds without tests; the metainfo has what
current AppStream asks for (a <developer> with an id, branding colours, no placeholder URLs).

Usage: check-flatpak.py MANIFEST METAINFO DESKTOP APP_ID
"""
import configparser
import json
import os
import re
import sys
import xml.etree.ElementTree as ET


OLDEST_RUNTIME = 50


def metainfo_problems(metainfo, app_id):
    problems = []
    if metainfo.find("developer_name") is not None:
        problems.append("metainfo uses the deprecated <developer_name>")
    dev = metainfo.find("developer")
    if dev is None or not dev.get("id") or not (dev.findtext("name") or "").strip():
        problems.append("metainfo lacks <developer id=...><name>")
    schemes = {c.get("scheme_preference") for c in metainfo.findall("branding/color")
               if c.get("type") == "primary" and re.fullmatch(r"#[0-9a-fA-F]{6}", c.text or "")}
    if schemes != {"light", "dark"}:
        problems.append("metainfo lacks primary <branding> colours for light and dark")
    # The project has no public address yet: no link and no screenshot (AppStream wants them
    # as URLs) until it has one; a placeholder would send users to someone else's page.
    links = [u.text for u in metainfo.findall("url")]
    links += [i.text for i in metainfo.findall("screenshots/screenshot/image")]
    for link in links:
        problems.append(f"metainfo link {link!r}: the project has no public address")
    return problems


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
    # GNOME 49 and older are end of life by late 2026; each GNOME release is supported for a year
    version = str(manifest.get("runtime-version", ""))
    if not version.isdigit() or int(version) < OLDEST_RUNTIME:
        problems.append(f"manifest runtime-version {version!r} is end of life (need >= {OLDEST_RUNTIME})")
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
    opts = last.get("config-opts", [])
    if "-Dtests=false" not in opts:
        problems.append("the burrow module builds the tests (they need tools the SDK lacks)")
    if any(o.startswith("-Dwerror") and not o.endswith("false") for o in opts):
        problems.append("the burrow module turns warnings into errors")

    problems.extend(metainfo_problems(metainfo, app_id))

    args = manifest.get("finish-args", [])
    # The network: chats with models on servers (OpenAI-compatible APIs).
    for needed in ("--share=ipc", "--socket=wayland", "--socket=fallback-x11", "--device=dri",
                   "--share=network"):
        if needed not in args:
            problems.append(f"finish-args lack {needed}")
    if not any(a.startswith("--filesystem=") for a in args):
        problems.append("finish-args give no access to model folders")

    for msg in problems:
        print(msg)
    if not problems:
        print(f"{app_id}: manifest, metainfo and desktop file agree; command {command}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

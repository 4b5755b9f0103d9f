#!/bin/sh
# `meson install --destdir` puts every desktop file where Flatpak (prefix /app) and
# distributions expect it, relative to the prefix, and installs each file once.
# Usage: check-install.sh BUILD_DIR PREFIX APP_ID
set -eu
build=$1 prefix=$2 id=$3
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT

if ! log=$(meson install -C "$build" --no-rebuild --destdir "$dest" 2>&1); then
  echo "meson install failed (is everything built?):"
  echo "$log"
  exit 1
fi
root="$dest$prefix"
status=0

# meson prints one "Installing SRC to DIR" line per file copied; a file twice is a rule twice
twice=$(echo "$log" | grep '^Installing ' | sort | uniq -d)
if [ -n "$twice" ]; then
  echo "installed more than once:"
  echo "$twice"
  status=1
fi

for f in \
  bin/burrow \
  bin/burrow-cli \
  share/man/man1/burrow-cli.1 \
  "share/applications/$id.desktop" \
  "share/metainfo/$id.metainfo.xml" \
  "share/mime/packages/$id.xml" \
  "share/glib-2.0/schemas/$id.gschema.xml" \
  "share/icons/hicolor/scalable/apps/$id.svg" \
  "share/icons/hicolor/symbolic/apps/$id-symbolic.svg" \
  share/burrow/demo-model/config.json \
  share/burrow/demo-model/model.safetensors.index.json
do
  if [ -f "$root/$f" ]; then
    echo "ok   $f"
  else
    echo "MISSING $f"
    status=1
  fi
done

[ -x "$root/bin/burrow" ] || { echo "bin/burrow is not executable"; status=1; }
glib-compile-schemas --strict --dry-run "$root/share/glib-2.0/schemas" || status=1
desktop-file-validate "$root/share/applications/$id.desktop" || status=1
grep -qx "Icon=$id" "$root/share/applications/$id.desktop" || { echo "desktop Icon is not $id"; status=1; }
exit "$status"

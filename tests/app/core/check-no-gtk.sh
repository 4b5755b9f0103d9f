#!/bin/sh
# The app's core stays GTK-free: no file in src/core includes GTK, GDK, libadwaita or
# Pango, and its build file names no such dependency. Usage: check-no-gtk.sh SOURCE_ROOT
set -eu
cd "$1/src/core"
status=0
if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<(gtk|gdk|adwaita|pango)' ./*.c ./*.h; then
  echo "src/core includes a GUI header (above)"
  status=1
fi
if grep -nE "gtk_dep|adw_dep|dependency\('(gtk4|libadwaita-1|pango)" meson.build; then
  echo "src/core/meson.build depends on a GUI library (above)"
  status=1
fi
[ "$status" = 0 ] && echo "src/core: $(ls ./*.c | wc -l) sources, no GUI header or dependency"
exit "$status"

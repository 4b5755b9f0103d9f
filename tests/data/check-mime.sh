#!/bin/sh
# The GGUF file type Burrow installs: shared-mime-info compiles it, GIO then names a .gguf
# file and an extensionless GGUF (Ollama's blobs) application/x-gguf by glob and by magic
# while another extensionless file stays what it was, and the desktop file opens the type.
# Usage: check-mime.sh MIME_XML DESKTOP_FILE GGUF_FILE
set -eu
xml=$1 desktop=$2 gguf=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

mkdir -p "$tmp/share/mime/packages" "$tmp/home"
cp "$xml" "$tmp/share/mime/packages/io.github.burrow.Burrow.xml"
update-mime-database "$tmp/share/mime"
cp "$gguf" "$tmp/model.gguf"
cp "$gguf" "$tmp/sha256-0123abcd"
printf 'not a model\n' > "$tmp/notes"

type_of() {
  XDG_DATA_DIRS="$tmp/share" XDG_DATA_HOME="$tmp/home" \
    gio info -a standard::content-type "$1" | sed -n 's/.*standard::content-type: //p'
}
for f in model.gguf sha256-0123abcd; do
  t=$(type_of "$tmp/$f")
  if [ "$t" = application/x-gguf ]; then echo "ok   $f: $t"; else echo "FAIL $f: $t"; status=1; fi
done
t=$(type_of "$tmp/notes")
if [ "$t" = application/x-gguf ]; then echo "FAIL notes: $t"; status=1; else echo "ok   notes: $t"; fi

grep -q '^MimeType=.*application/x-gguf;' "$desktop" || { echo "FAIL: no MimeType application/x-gguf in $desktop"; status=1; }
grep -q '^Exec=burrow %F$' "$desktop" || { echo "FAIL: Exec does not pass %F in $desktop"; status=1; }
exit "$status"

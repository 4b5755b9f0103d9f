#!/bin/sh
# Every source file with translatable strings is listed in po/POTFILES.in, and every
# listed file exists. Usage: check-potfiles.sh SOURCE_ROOT
set -eu
cd "$1"
listed=$(grep -v '^#' po/POTFILES.in | sed '/^$/d')
status=0

for f in $listed; do
  if [ ! -f "$f" ]; then
    echo "po/POTFILES.in lists $f, which does not exist"
    status=1
  fi
done

candidates=$(find src data -type f \( -name '*.c' -o -name '*.ui' -o -name '*.desktop.in' \
  -o -name '*.metainfo.xml.in' -o -name '*.gschema.xml' \) | sort)
for f in $candidates; do
  case "$f" in
    *.desktop.in|*.metainfo.xml.in|*.gschema.xml) needs=1 ;;
    *) if grep -qE '(^|[^A-Za-z0-9_])(_|N_|C_|NC_|ngettext)[[:space:]]*\(|translatable="yes"' "$f"; then
         needs=1
       else
         needs=0
       fi ;;
  esac
  if [ "$needs" = 1 ] && ! printf '%s\n' "$listed" | grep -qxF "$f"; then
    echo "$f has translatable strings but is missing from po/POTFILES.in"
    status=1
  fi
done

[ "$status" = 0 ] && echo "po/POTFILES.in covers $(printf '%s\n' "$listed" | wc -l) files"
exit "$status"

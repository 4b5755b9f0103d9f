#!/bin/sh
# Every translatable string with a placeholder tells translators what fills it: the
# template, extracted as po/meson.build does (glib keywords, only "Translators:" comments),
# has a "#. Translators:" comment on every c-format entry.
# Usage: check-translator-comments.sh SOURCE_ROOT XGETTEXT
set -eu
cd "$1"
xgettext=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! grep -q -- "--add-comments=Translators" po/meson.build; then
  echo "po/meson.build does not extract only Translators: comments"
  exit 1
fi

grep -v '^#' po/POTFILES.in | sed '/^$/d' > "$tmp/files"
"$xgettext" --from-code=UTF-8 --add-comments --add-comments=Translators \
  --keyword=_ --keyword=N_ --keyword=C_:1c,2 --keyword=NC_:1c,2 --keyword=g_dngettext:2,3 \
  --flag=N_:1:pass-c-format --flag=C_:2:pass-c-format --flag=NC_:2:pass-c-format \
  --flag=g_strdup_printf:1:c-format --flag=g_string_printf:2:c-format \
  --flag=g_string_append_printf:2:c-format \
  --files-from="$tmp/files" --output="$tmp/burrow.pot"

n=$(grep -c '^#\. Translators:' "$tmp/burrow.pot" || true)
if [ "$n" -eq 0 ]; then
  echo "the template has no Translators: comment"
  exit 1
fi

# Entries are separated by blank lines; print the c-format ones without a comment.
missing=$(awk 'BEGIN { RS = ""; FS = "\n" }
               /#, [a-z-]*c-format/ && !/#\. Translators:/ { print $0 "\n" }' "$tmp/burrow.pot")
if [ -n "$missing" ]; then
  echo "strings with placeholders and no Translators: comment:"
  echo "$missing"
  exit 1
fi
echo "$n Translators: comments; every string with a placeholder has one"

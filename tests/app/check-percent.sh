#!/bin/sh
# Percentages are written one way, the user's language's: only burrow_percent_text
# (src/core/burrow-percent.c) puts a percent sign after a number. Fails naming every other
# printf format with one ("%d%%", "%.1f %%"). Usage: check-percent.sh SOURCE_ROOT
set -eu
root=$1
found=$(grep -rn --include='*.c' --include='*.ui' -E '%(\.[0-9*]+)?[dfui][^"%]{0,2}%%' \
          "$root/src" | grep -v '^[^:]*src/core/burrow-percent\.c:' || true)
if [ -n "$found" ]; then
  echo "percentages formatted outside burrow_percent_text:"
  echo "$found"
  exit 1
fi
echo "every percentage goes through burrow_percent_text"

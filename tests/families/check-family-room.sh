#!/bin/sh
# A family lives in engine/families/ alone: collects every name a family answers to (the
# descriptors' canonical model_type, short name and aliases) and fails when any file of the
# engine outside engine/families/ or of the app names one. Prints what a family needs
# outside its own file: the registry's FAMILIES list and the folder's meson.build, both in
# engine/families/ too.
set -eu
root=${1:?usage: check-family-room.sh SOURCE_ROOT}
cd "$root"

names=$(sed -n -e 's/^  \.name = "\([a-z0-9_]*\)",.*/\1/p' \
               -e 's/^  \.short_name = "\([a-z0-9_]*\)",.*/\1/p' \
               -e 's/^  { "\([a-z0-9_]*\)", .*/\1/p' engine/families/*.c | sort -u)
count=$(printf '%s\n' "$names" | grep -c . || true)
if [ "$count" -lt 8 ]; then
  echo "found only $count family names in engine/families/*.c: the descriptor layout changed?"
  exit 1
fi

fail=0
for n in $names; do
  hits=$(grep -rnw --include='*.c' --include='*.h' --include='*.build' -e "$n" \
           engine src --exclude-dir=families || true)
  if [ -n "$hits" ]; then
    echo "the family name '$n' appears outside engine/families/:"
    echo "$hits"
    fail=1
  fi
done

registered=$(sed -n 's/^  X (\([a-z0-9_]*\)).*/\1/p' engine/families/registry.c | wc -l)
echo "$count names of $registered registered families; outside engine/families/ none is named"
echo "a new family needs: engine/families/<name>.c, its line in FAMILIES" \
     "(engine/families/registry.c) and in engine/families/meson.build, its tests"
exit $fail

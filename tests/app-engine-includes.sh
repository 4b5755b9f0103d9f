#!/bin/sh
# Fails when a file of the app (src/) includes one of the engine's internal headers: the app
# sees the engine through engine/include/burrow-engine.h alone (engine_dep carries only that
# folder; this also catches a path spelled from the source root, which the build would find).
set -eu
root=$1
bad=$(find "$root/src" -name '*.[ch]' | while read -r f; do
  dir=$(dirname "$f")
  sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
  while read -r name; do
    # the app's own headers, next to the file or from src/
    if [ -e "$dir/$name" ] || [ -e "$root/src/$name" ]; then continue; fi
    case $name in
      burrow-engine.h) continue ;;
      engine/*) echo "$f: $name" ;;
      *) if [ -e "$root/engine/$name" ] || [ -n "$(find "$root/engine" -path "*/$name" -print)" ]
         then echo "$f: $name"; fi ;;
    esac
  done
done)
if [ -n "$bad" ]; then
  echo "The app includes engine internals (use burrow-engine.h):"
  echo "$bad"
  exit 1
fi
echo "src/ includes no engine header but burrow-engine.h"

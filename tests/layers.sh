#!/bin/sh
# Fails when a file of the engine (or of the remote client beside it) includes a header from a
# room its row below does not list: data flows down the table, and no room reaches back up.
# Each room may include its own headers; "api" is the public header engine/include/burrow-engine.h;
# burrow-config.h and kernel-features.h are generated build configuration any room may read.
# A folder under engine/ that has no row fails too, so a new room must take its place here;
# a header in the private list below may be included only from its own room.
set -eu
root=$1

rooms='
core:
quant:     core
kernels:   core quant api
stream:    core quant kernels
blocks:    core quant kernels stream
synth:     core quant
text:      core api
model:     core quant kernels stream blocks
families:  core quant kernels stream blocks model text synth api
convert:   core quant kernels model text families api
run:       core quant kernels stream blocks model text families convert api
cli:       core quant kernels stream blocks synth text model families convert run api remote
api:
remote:    api
'

# Headers that only their own room may include, wherever the including file lives (the
# engine's rooms, the app, the tests): "HEADER ROOM".
private='
model/model-private.h model
'

# The folder each room's files live in.
room_dir () {
  case $1 in
    api) echo "$root/engine/include" ;;
    remote) echo "$root/remote" ;;
    *) echo "$root/engine/$1" ;;
  esac
}

names=$(printf '%s\n' "$rooms" | sed -n 's/^\([a-z]*\):.*/\1/p')

bad=
for dir in "$root"/engine/*/; do
  room=$(basename "$dir")
  [ "$room" = include ] && continue
  if ! printf '%s\n' "$names" | grep -qx "$room"; then
    bad="$bad
engine/$room/: a room with no row in tests/layers.sh"
  fi
done

# "ROOM FILE" for every source file, then one awk pass over them and their quoted includes.
# An include names its room ("room/x.h") or is a bare name: next to the file, else in exactly
# one room's folder.
files=$(for room in $names; do
  d=$(room_dir "$room")
  if [ -d "$d" ]; then find "$d" -name '*.[ch]' | sort | sed "s|^|$room |"; fi
done)
bad="$bad$(printf '%s\n' "$files" | awk -v root="$root/" -v rooms="$rooms" '
  BEGIN {
    n = split(rooms, lines, "\n")
    for (i = 1; i <= n; i++) {
      if (split(lines[i], w, /[: \t]+/) < 1 || w[1] == "") continue
      for (j = 2; j in w; j++) if (w[j] != "") ok[w[1], w[j]] = 1
    }
  }
  { room[NR] = $1; path[NR] = $2; base = $2; sub(/.*\//, "", base)
    dir = $2; sub(/\/[^\/]*$/, "", dir); have[dir "/" base] = 1
    if (!((base, $1) in owner)) { owner[base, $1] = 1; owners[base] = owners[base] " " $1 } }
  END {
    for (k = 1; k <= NR; k++) {
      f = path[k]; r = room[k]; dir = f; sub(/\/[^\/]*$/, "", dir)
      while ((getline line < f) > 0) {
        if (line !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
        name = line; sub(/^[^"]*"/, "", name); sub(/".*/, "", name)
        if (name == "burrow-config.h" || name == "kernel-features.h") continue
        if (name ~ /\//) { t = name; sub(/\/.*/, "", t) }
        else if ((dir "/" name) in have) t = r
        else { c = split(owners[name], o, " "); t = c == 1 ? o[1] : "an unknown room" }
        if (t != r && !((r, t) in ok)) {
          rel = f; sub("^" root, "", rel)
          printf "\n%s: %s (%s may not include %s)", rel, name, r, t
        }
      }
      close(f)
    }
  }')"

# A private header named from outside its room's folder, by any file of the tree.
for entry in $(printf '%s\n' "$private" | sed -n 's/^\([^ ]*\) \([a-z]*\)$/\1:\2/p'); do
  header=${entry%:*}
  own=$(room_dir "${entry#*:}")
  for f in $(grep -rl --include='*.[ch]' "#[[:space:]]*include[[:space:]]*\"$header\"" \
               "$root/engine" "$root/remote" "$root/src" "$root/tests" 2>/dev/null); do
    case $f in "$own"/*) continue ;; esac
    bad="$bad
${f#"$root/"}: $header (private to $(basename "$own")/)"
  done
done

if [ -n "$bad" ]; then
  echo "Includes against the layer table in tests/layers.sh:$bad"
  exit 1
fi
echo "every engine include points down the layer table"

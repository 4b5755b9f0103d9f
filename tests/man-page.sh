#!/bin/sh
# Fails when burrow-cli(1) misses a command or an option that `burrow-cli --help` and
# `burrow-cli COMMAND --help` list: the man page must describe every one of them.
# Usage: man-page.sh BURROW_CLI MAN_PAGE
set -eu
cli=$1 page=$2
[ -x "$cli" ] || { echo "no burrow-cli at $cli"; exit 1; }
[ -f "$page" ] || { echo "no man page at $page"; exit 1; }
# roff spells a hyphen \-; read the page with plain ones
text=$(sed 's/\\-/-/g' "$page")

# "  NAME   summary" lines after a "Commands:" or "Modes:" heading
names() {
  "$@" --help | awk '/^(Commands|Modes):$/ { on = 1; next } on && /^  [a-z]/ { print $1 } /^$/ { on = 0 }'
}

commands=$(names "$cli")
[ -n "$commands" ] || { echo "burrow-cli --help lists no commands"; exit 1; }
missing=""
helps=""
for c in $commands; do
  if [ "$c" = bench ]; then
    modes=$(names "$cli" bench)
    [ -n "$modes" ] || { echo "burrow-cli bench --help lists no modes"; exit 1; }
    for m in $modes; do
      # a ".SS" heading per command; bench's modes are "bench MODE"
      printf '%s\n' "$text" | grep -q "^\.SS \"bench $m\"" || missing="$missing\n  bench $m (no .SS heading)"
      helps="$helps$("$cli" bench "$m" --help)
"
    done
  else
    printf '%s\n' "$text" | grep -q "^\.SS $c\$" || missing="$missing\n  $c (no .SS heading)"
    helps="$helps$("$cli" "$c" --help)
"
  fi
done

# every long option a command's --help lists, --help itself aside
options=$(printf '%s' "$helps" | sed -n 's/^  \(-[a-zA-Z], \)\{0,1\}\(--[a-z0-9-]*\).*/\2/p' | sort -u)
[ -n "$options" ] || { echo "no options found in the commands' --help"; exit 1; }
for o in $options; do
  [ "$o" = --help ] && continue
  printf '%s\n' "$text" | grep -q -e "$o\\([^a-z0-9-]\\|\$\\)" || missing="$missing\n  $o"
done

if [ -n "$missing" ]; then
  printf 'burrow-cli(1) (%s) does not describe:%b\n' "$page" "$missing"
  exit 1
fi
echo "burrow-cli(1) describes $(echo $commands | wc -w) commands and $(echo $options | wc -w) options"

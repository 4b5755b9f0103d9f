#!/bin/sh
# Runs a command with a Secret Service of its own, so that libsecret is exercised for real:
# a private D-Bus session bus and gnome-keyring-daemon with an unlocked login keyring, in
# a temporary home that is removed afterwards (the daemons end with the bus).
# Usage: with-keyring.sh COMMAND [ARGS...]
set -eu
# The bus and the daemons it starts run without the tests' G_DEBUG=fatal-warnings: a
# warning of gnome-keyring's own must not abort it. The command gets it back.
# Nor the display: a prompt to unlock the keyring (gcr-prompter, started by the bus) then
# fails at once, as one the person dismisses, instead of waiting on a window no one sees.
if [ -z "${BURROW_KEYRING_BUS:-}" ]; then
  export BURROW_KEYRING_BUS=1 BURROW_KEYRING_G_DEBUG="${G_DEBUG:-}" \
         BURROW_KEYRING_DISPLAY="${DISPLAY:-}"
  exec env -u G_DEBUG -u DISPLAY -u WAYLAND_DISPLAY dbus-run-session -- "$0" "$@"
fi
command -v gnome-keyring-daemon >/dev/null || {
  echo "Bail out! gnome-keyring-daemon is missing (install gnome-keyring)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp" XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config" \
       XDG_CACHE_HOME="$tmp/cache" XDG_RUNTIME_DIR="$tmp/run"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
# An empty password would make the daemon ask through a prompter, which has no display.
eval "$(printf 'burrow-test' | gnome-keyring-daemon --unlock --components=secrets)"
# The daemon takes its bus name a moment after printing its environment; a client that
# came sooner would have the bus start a second, locked daemon through D-Bus activation.
tries=0
until gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
        --method org.freedesktop.DBus.NameHasOwner org.freedesktop.secrets 2>/dev/null \
      | grep -q true; do
  tries=$((tries + 1))
  [ "$tries" -le 100 ] || { echo "Bail out! gnome-keyring-daemon never took its bus name"; exit 1; }
  sleep 0.1
done
[ -z "$BURROW_KEYRING_G_DEBUG" ] || export G_DEBUG="$BURROW_KEYRING_G_DEBUG"
[ -z "$BURROW_KEYRING_DISPLAY" ] || export DISPLAY="$BURROW_KEYRING_DISPLAY"
"$@"

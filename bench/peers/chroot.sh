#!/bin/sh
# Make (once) a Debian sid chroot for the peer engines, from Debian's archive only.
#
#   sh bench/peers/chroot.sh [PEERS]        (PEERS: /work/peers)
#
# The host is Debian 12 (rustc 1.63); rabbit needs Rust >= 1.85 and its crates, and llama.cpp
# with Kimi Linear is packaged only in sid, so both live in a sid chroot at PEERS/chroot.
# Needs root and debootstrap; re-running it only re-mounts and re-checks.
set -eu
PEERS=${1:-/work/peers}
C=$PEERS/chroot
MIRROR=http://deb.debian.org/debian

if [ ! -x "$C/usr/bin/apt-get" ]; then
  command -v debootstrap >/dev/null || apt-get install -y debootstrap
  mkdir -p "$PEERS"
  nice -n 10 debootstrap --variant=minbase trixie "$C" "$MIRROR"
fi
# sid's Release file may be past its Valid-Until on a mirror snapshot: accept it.
cat > "$C/etc/apt/sources.list.d/debian.sources" <<SRC
Types: deb deb-src
URIs: $MIRROR
Suites: sid
Check-Valid-Until: no
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
rm -f "$C/etc/apt/sources.list" "$C/etc/apt/preferences.d/pin"
for d in proc sys dev dev/pts; do
  mountpoint -q "$C/$d" || mount --bind "/$d" "$C/$d"
done
cp /etc/resolv.conf "$C/etc/resolv.conf"
if [ ! -e "$C/.sid-upgraded" ]; then
  chroot "$C" apt-get update
  chroot "$C" env DEBIAN_FRONTEND=noninteractive nice -n 10 apt-get -y dist-upgrade
  touch "$C/.sid-upgraded"
fi

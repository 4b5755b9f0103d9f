#!/bin/sh
# Build rabbit (github.com/ferrumox/rabbit) offline, against Debian sid's packaged crates.
#
#   sh bench/peers/build-rabbit.sh SRC [PEERS]
#
# SRC: an unpacked rabbit tree (e.g. `git archive 5cd932a | tar -x`); PEERS: /work/peers.
# Result: PEERS/chroot/usr/local/bin/rabbit (release, default features, rabbit's own
# target-cpu=native, or RABBIT_CPU: x86-64-v3 holds it to AVX2 on a host that has AVX-512);
# it links sid's glibc, so run it through `chroot PEERS/chroot`.
# No network for cargo: crates come from /usr/share/cargo/registry (the librust-*-dev
# packages), so the patch below only relaxes version requirements to what sid ships and drops
# the bench-only dev-dependency (criterion) that cargo would otherwise need to resolve.
set -eu
SRC=$1
PEERS=${2:-/work/peers}
C=$PEERS/chroot
HERE=$(cd "$(dirname "$0")" && pwd)

sh "$HERE/chroot.sh" "$PEERS"
chroot "$C" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
  rustc cargo librust-serde-dev librust-serde-derive-dev librust-serde-json-dev librust-libc-dev \
  librust-rayon-dev librust-tiny-http-dev librust-num-cpus-dev librust-fancy-regex-dev \
  librust-base64-dev librust-ureq-dev librust-memmap2-dev librust-io-uring-dev

rm -rf "$C/build/rabbit"
mkdir -p "$C/build"
cp -a "$SRC" "$C/build/rabbit"
cd "$C/build/rabbit"
# Versions sid ships that are older than rabbit's lock: fancy-regex 0.11 (0.13 wanted).
sed -i -e 's/^fancy-regex = "0.13"/fancy-regex = "0.11"/' \
       -e '/^\[dev-dependencies\]/,$d' Cargo.toml
rm -f Cargo.lock
mkdir -p .cargo
cat > .cargo/config.toml <<CFG
[build]
rustflags = ["-C", "target-cpu=${RABBIT_CPU:-native}"]

[source.crates-io]
replace-with = "debian"

[source.debian]
directory = "/usr/share/cargo/registry"

[net]
offline = true
CFG
chroot "$C" sh -c 'cd /build/rabbit && nice -n 19 cargo build --release --offline --bin rabbit'
install -m 755 "$C/build/rabbit/target/release/rabbit" "$C/usr/local/bin/rabbit"
echo "built $C/usr/local/bin/rabbit"

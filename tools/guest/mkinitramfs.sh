#!/usr/bin/env bash
# Build the guest initramfs of Linux VMs (docs/guests.md) from Debian
# packages: busybox-static, the virtio and vsock modules of the kernel
# package the KVM rig uses (linux-image-amd64's dependency), hvguest, hvblk
# (taken from hvguest's folder when it is there) and tools/guest/init.
#
#   tools/guest/mkinitramfs.sh --hvguest PATH --out FILE [--kernel-out FILE]
#
# The .debs are fetched with apt-get download into $KVMRIG_CACHE/debs
# (default build/kvmrig: the rig's cache, shared with it) unless a .deb of
# the candidate version is there already, so it works offline once the
# rig ran. --kernel-out also copies that package's vmlinuz, and unpacks
# its ELF vmlinux (tools/guest/extract-vmlinux.py) beside it as
# `vmlinux`, for a boot through the PVH entry (docs/guests.md).
#
# Beside the output, host/ gets what the network test needs on the host
# side in the KVM rig, whose own image has neither (tools/kvmrig is the
# rig's, its module list fixed): the kernel package's tun.ko (the rig runs
# that very kernel) with bridge.ko, stp.ko and llc.ko, and busybox (ping,
# nc, insmod).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd -P)
here=$top/tools/guest
cache=${KVMRIG_CACHE:-$top/build/kvmrig}
hvguest=
out=
kout=

die() {
	echo "mkinitramfs: $*" >&2
	exit 1
}

while [ $# -gt 0 ]; do
	case $1 in
	--hvguest) hvguest=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--kernel-out) kout=$2; shift 2 ;;
	*) die "usage: $0 --hvguest PATH --out FILE [--kernel-out FILE]" ;;
	esac
done
[ -n "$hvguest" ] && [ -x "$hvguest" ] || die "--hvguest: no program"
[ -n "$out" ] || die "--out missing"
hvblk=$(dirname "$hvguest")/hvblk
[ -x "$hvblk" ] || hvblk=

# The virtio transports and drivers, in no order: each is preceded by
# what it depends on (its .modinfo depends=).
mods=(virtio_pci virtio_blk virtio_net virtio-rng vsock
	vmw_vsock_virtio_transport)

kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
	awk '/Depends: linux-image-[0-9]/{print $2; exit}') || true
[ -n "$kpkg" ] || die "apt-cache knows no linux-image-amd64 (apt-get update?)"
kver=${kpkg#linux-image-}
fetch() { # fetch PACKAGE: echo the cached .deb of its candidate version
	local pkg=$1 ver deb
	ver=$(apt-cache policy "$pkg" 2>/dev/null |
		awk '/Candidate:/{print $2; exit}')
	[ -n "$ver" ] && [ "$ver" != "(none)" ] ||
		die "apt-cache has no candidate for $pkg"
	deb=$(ls "$cache/debs/${pkg}_"*"${ver#*:}_amd64.deb" 2>/dev/null |
		head -1) || true
	if [ -z "$deb" ]; then
		mkdir -p "$cache/debs"
		echo "mkinitramfs: apt-get download $pkg=$ver" >&2
		(cd "$cache/debs" && apt-get download -q "$pkg=$ver" \
			>/dev/null 2>&1) || die "apt-get download $pkg=$ver failed"
		deb=$(ls "$cache/debs/${pkg}_"*"${ver#*:}_amd64.deb" | head -1)
	fi
	echo "$deb"
}
kdeb=$(fetch "$kpkg")
bbdeb=$(fetch busybox-static)

# Rebuild only when an input changed: the key of the last build is kept
# next to the output.
image_rev=1
key=$( (basename "$kdeb"; basename "$bbdeb"; echo "$image_rev ${mods[*]}";
	sha256sum <"$hvguest"; [ -z "$hvblk" ] || sha256sum <"$hvblk";
	cat "$here/init" "$0") | sha256sum | cut -c1-16)
hostdir=$(dirname "$out")/host
if [ -f "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ] &&
	[ -f "$hostdir/tun.ko" ] && [ -f "$hostdir/bridge.ko" ] &&
	[ -x "$hostdir/busybox" ] &&
	{ [ -z "$kout" ] || { [ -f "$kout" ] && [ -f "$(dirname "$kout")/vmlinux" ]; }; }; then
	echo "mkinitramfs: $out is up to date" >&2
	exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mkinitramfs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/x" "$tmp/root/lib/modules"
mkdir -p "$tmp/root/"{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp}
# Only the kernel and the module folders we need: the whole package is
# hundreds of MiB unpacked.
m=./lib/modules/$kver/kernel
dpkg-deb --fsys-tarfile "$kdeb" | tar -x -C "$tmp/x" --wildcards \
	"./boot/vmlinuz-$kver" "$m/drivers/virtio/*" "$m/drivers/block/*" \
	"$m/drivers/net/*.ko" "$m/net/core/*" "$m/drivers/char/hw_random/*" \
	"$m/net/vmw_vsock/*" "$m/net/bridge/bridge.ko" "$m/net/802/stp.ko" \
	"$m/net/llc/llc.ko" || die "cannot unpack $kdeb"
dpkg-deb -x "$bbdeb" "$tmp/x" || die "cannot unpack $bbdeb"
kmod=$tmp/x/lib/modules/$kver/kernel
declare -A done_mod=()
order=()
add_mod() {
	local m=$1 f d
	[ -z "${done_mod[$m]:-}" ] || return 0
	done_mod[$m]=1
	f=$(find "$kmod" -name "$m.ko" | head -1)
	[ -n "$f" ] || die "$kpkg has no module $m"
	for d in $(strings -a "$f" | sed -n 's/^depends=//p' | tr , ' '); do
		add_mod "$d"
	done
	cp "$f" "$tmp/root/lib/modules/"
	order+=("$m")
}
for m in "${mods[@]}"; do add_mod "$m"; done
printf '%s\n' "${order[@]}" >"$tmp/root/lib/modules/order"
cp "$tmp/x/bin/busybox" "$tmp/root/bin/busybox"
for a in $("$tmp/x/bin/busybox" --list); do
	[ -e "$tmp/root/bin/$a" ] || ln -s busybox "$tmp/root/bin/$a"
done
cp "$hvguest" "$tmp/root/bin/hvguest"
[ -z "$hvblk" ] || cp "$hvblk" "$tmp/root/bin/hvblk"
cp "$here/init" "$tmp/root/init"
chmod 755 "$tmp/root/init" "$tmp/root/bin/hvguest"
find "$tmp/root" -exec touch -h -d @0 {} +
mkdir -p "$(dirname "$out")"
(cd "$tmp/root" && find . | LC_ALL=C sort |
	"$tmp/x/bin/busybox" cpio -o -H newc -R 0:0 2>/dev/null) |
	gzip -n -6 >"$out.tmp"
mv "$out.tmp" "$out"
if [ -n "$kout" ]; then
	cp "$tmp/x/boot/vmlinuz-$kver" "$kout.tmp"
	mv "$kout.tmp" "$kout"
	python3 "$here/extract-vmlinux.py" "$kout" "$(dirname "$kout")/vmlinux" ||
		die "cannot unpack the vmlinux of $kout"
fi
mkdir -p "$hostdir"
for hm in tun llc stp bridge; do
	cp "$(find "$kmod" -name $hm.ko | head -1)" "$hostdir/$hm.ko.tmp" ||
		die "$kpkg has no $hm.ko"
	mv "$hostdir/$hm.ko.tmp" "$hostdir/$hm.ko"
done
cp "$tmp/x/bin/busybox" "$hostdir/busybox.tmp"
mv "$hostdir/busybox.tmp" "$hostdir/busybox"
echo "$key" >"$out.key"
echo "mkinitramfs: $out ($(du -k "$out" | cut -f1) KiB, modules: ${order[*]})" >&2

#!/usr/bin/env bash
# Build the Debian package of migrated (CPack DEB, cmake/Install.cmake).
#
#   tools/package.sh [-jN]     -> build/package/migrated_<version>_<arch>.deb
#
# A Release build configured for the package layout (prefix /usr, config
# in /etc) in build/package, only the installed programs built; runtime
# dependencies from dpkg-shlibdeps. Install with
#   apt-get install ./build/package/migrated_*.deb   (or dpkg -i)
# docs/install.md describes what it installs and the service.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
jobs=${1:--j$(nproc)}
bdir=$top/build/package

# The build's packages and dpkg-dev (dpkg-shlibdeps): tools/setup.sh.
"$top/tools/setup.sh" deps

if [ ! -f "$bdir/CMakeCache.txt" ]; then
	cmake -S "$top" -B "$bdir" -DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_SYSCONFDIR=/etc \
		-DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON >/dev/null
fi
cmake --build "$bdir" "$jobs" --target migrated migrated-vmm migratectl \
	migrate-send migrate-recv dirtyrate hvbench
(cd "$bdir" && cpack -G DEB >/dev/null)
deb=$(ls -t "$bdir"/migrated_*.deb | head -1)
echo "$deb"

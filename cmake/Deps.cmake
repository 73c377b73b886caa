# Every library comes from a Debian package; tools/setup.sh installs them.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
pkg_check_modules(UV REQUIRED IMPORTED_TARGET libuv)
pkg_check_modules(PROTOBUFC REQUIRED IMPORTED_TARGET libprotobuf-c)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
pkg_check_modules(OPENSSL REQUIRED IMPORTED_TARGET openssl)
pkg_check_modules(CUNIT REQUIRED IMPORTED_TARGET cunit)
# etcd client (migrated/fleet): HTTP/JSON gateway.
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)
pkg_check_modules(JSONC REQUIRED IMPORTED_TARGET json-c)
find_program(PROTOC_C protoc-c REQUIRED)

# Writes the copy of a .proto that protoc-c compiles (proto/CMakeLists.txt).
# control.proto's package is versioned (migd.v1): that name is the
# contract, on every descriptor and for clients in any language. The C
# names stay unversioned (Migd__Request, migd__request__init), so that a
# new API version is a new package beside the old one, not a rename of
# every symbol: the copy gains protobuf-c's c_package option, which names
# the C identifiers only. The source file stays free of protobuf-c
# imports, so other languages compile it as it is.
#   cmake -DIN=src.proto -DOUT=copy.proto -DCPKG=migd -P cnames.cmake
file(READ "${IN}" text)
string(REGEX MATCH "\npackage [a-z0-9_.]+;\n" pkg "${text}")
if(NOT pkg)
	message(FATAL_ERROR "${IN}: no package line")
endif()
string(REPLACE "${pkg}" "${pkg}import \"protobuf-c/protobuf-c.proto\";\noption (pb_c_file).c_package = \"${CPKG}\";\n" text "${text}")
file(WRITE "${OUT}.tmp" "${text}")
file(RENAME "${OUT}.tmp" "${OUT}")

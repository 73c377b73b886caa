# HV_FUZZ=ON: the libFuzzer build (tests/fuzz/, docs/fuzzing.md). Needs
# clang and ASan+UBSan (HV_SANITIZE=address); tools/setup.sh fuzz makes it
# in build/fuzz. Every library is built with coverage instrumentation so
# that the fuzzer sees the decoders' branches; only the fuzz targets link
# libFuzzer's main().
option(HV_FUZZ "Build the libFuzzer targets of tests/fuzz (clang)" OFF)
if(HV_FUZZ)
	if(NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
		message(FATAL_ERROR "HV_FUZZ needs clang (CC=clang), not "
			"${CMAKE_C_COMPILER_ID}")
	endif()
	if(NOT HV_SANITIZE STREQUAL "address")
		message(FATAL_ERROR "HV_FUZZ needs HV_SANITIZE=address")
	endif()
	add_compile_options(-fsanitize=fuzzer-no-link)
endif()
if(HV_FUZZ)
	# clang's -Wformat=2 also flags vsnprintf() on a va_list in the
	# printf-like loggers (gcc does not); their callers are checked.
	add_compile_options(-Wno-format-nonliteral)
	# gnu11 is the house dialect: GNU extensions are meant (kvm_msrs
	# followed by its entries, arch/x86/x86_vcpu.c).
	add_compile_options(-Wno-gnu-variable-sized-type-not-at-end)
	# The freestanding guest image keeps its gcc (arch/x86/x86.cmake).
	find_program(HV_GUEST_CC NAMES gcc cc REQUIRED)
endif()

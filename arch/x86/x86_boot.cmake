# arch/x86/boot: the Linux boot protocol (bzImage, zero page, e820) and
# the MP table of a Linux guest (docs/guests.md), in hv_arch_x86.
target_sources(hv_arch_x86 PRIVATE
	${CMAKE_CURRENT_SOURCE_DIR}/boot/bzimage.c
	${CMAKE_CURRENT_SOURCE_DIR}/boot/mptable.c
	${CMAKE_CURRENT_SOURCE_DIR}/boot/pvh_linux.c)

# hv_arch_x86: KVM x86 vCPU boot and state helpers, the PVH ELF loader and
# the identity page-table builder; plus the guest image (arch/x86/guest),
# built with the host gcc as a freestanding ELF into the build tree.
set(HV_GUEST_DIR ${CMAKE_CURRENT_SOURCE_DIR}/guest)
set(HV_GUEST_ELF ${CMAKE_BINARY_DIR}/arch/x86/guest/guest.elf)
set(HV_GUEST_SRCS
	${HV_GUEST_DIR}/entry.S
	${HV_GUEST_DIR}/guest.c
	${HV_GUEST_DIR}/halt.c

	${HV_GUEST_DIR}/qemu_mode.c
	${CMAKE_SOURCE_DIR}/hvcore/workload.c)
# No project flags (sanitizers, -fPIE) reach the guest: it is its own
# freestanding program, linked at 1 MiB by its own script.
set(HV_GUEST_CFLAGS -ffreestanding -fno-pic -no-pie -mno-red-zone
	-nostdlib -static -O2 -fno-stack-protector -mgeneral-regs-only
	-fno-asynchronous-unwind-tables -fcf-protection=none -fno-builtin
	-Wall -Wextra -Werror -I${CMAKE_SOURCE_DIR}
	-Wl,--build-id=none -Wl,-z,noexecstack -Wl,-T,${HV_GUEST_DIR}/guest.lds)
# The guest's flags are gcc's; a clang build (the fuzz build) names gcc here.
if(NOT HV_GUEST_CC)
	set(HV_GUEST_CC ${CMAKE_C_COMPILER})
endif()
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/arch/x86/guest)
add_custom_command(
	OUTPUT ${HV_GUEST_ELF}
	COMMAND ${HV_GUEST_CC} ${HV_GUEST_CFLAGS} -o ${HV_GUEST_ELF}
		${HV_GUEST_SRCS}
	DEPENDS ${HV_GUEST_SRCS} ${HV_GUEST_DIR}/guest.lds
		${HV_GUEST_DIR}/layout.h ${HV_GUEST_DIR}/ucall.h
		${HV_GUEST_DIR}/halt.h

		${HV_GUEST_DIR}/qemu_mode.h
		${CMAKE_SOURCE_DIR}/hvcore/workload.h
	COMMENT "guest image arch/x86/guest/guest.elf")
add_custom_target(hv_guest_x86 DEPENDS ${HV_GUEST_ELF})

add_library(hv_arch_x86 STATIC
	${CMAKE_CURRENT_SOURCE_DIR}/pvh.c
	${CMAKE_CURRENT_SOURCE_DIR}/pgtable.c
	${CMAKE_CURRENT_SOURCE_DIR}/x86_vcpu.c
	${CMAKE_CURRENT_SOURCE_DIR}/x86_state.c)
add_dependencies(hv_arch_x86 hv_guest_x86)
target_compile_definitions(hv_arch_x86 PUBLIC
	HV_GUEST_ELF_PATH="${HV_GUEST_ELF}")
target_link_libraries(hv_arch_x86 PUBLIC hvcore hv_proto)

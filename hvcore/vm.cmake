# hvcore_vm: the generic VM and vCPU objects (hvcore/vm.h, hvcore/vcpu.h)
# and guest memory, over the accelerators that exist (hvcore_kvm from
# hvcore/kvm/, hvcore_soft from hvcore/soft/). Accelerators call back into
# hvcore_vm (vCPU checkpoints, memslots of the VM), so each accelerator
# library and hvcore_vm link each other; CMake repeats cyclic static
# libraries on the link line.
add_library(hvcore_vm STATIC
	${CMAKE_CURRENT_SOURCE_DIR}/vm.c
	${CMAKE_CURRENT_SOURCE_DIR}/vm_state.c
	${CMAKE_CURRENT_SOURCE_DIR}/vcpu.c
	${CMAKE_CURRENT_SOURCE_DIR}/guest_mem.c
	${CMAKE_CURRENT_SOURCE_DIR}/dirtyrate.c)
target_link_libraries(hvcore_vm PUBLIC hvcore hv_proto Threads::Threads)
if(TARGET hvcore_kvm)
	target_compile_definitions(hvcore_vm PRIVATE HV_HAVE_KVM)
	target_link_libraries(hvcore_vm PUBLIC hvcore_kvm)
	target_link_libraries(hvcore_kvm PUBLIC hvcore_vm)
endif()
# soft.h holds hv_soft_ops; until it exists the soft library is not
# an accelerator yet.
if(TARGET hvcore_soft AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/soft/soft.h)
	target_compile_definitions(hvcore_vm PRIVATE HV_HAVE_SOFT)
	target_link_libraries(hvcore_vm PUBLIC hvcore_soft)
	target_link_libraries(hvcore_soft PUBLIC hvcore_vm)
endif()
set_target_properties(hvcore_vm PROPERTIES LINK_INTERFACE_MULTIPLICITY 3)

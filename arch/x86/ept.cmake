# The EPT-style stage-2 entry format of the soft MMU (hvcore/soft/pte_fmt.h).
add_library(hv_arch_x86_ept STATIC ${CMAKE_CURRENT_LIST_DIR}/ept.c)

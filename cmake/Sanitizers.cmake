# HV_SANITIZE=address: ASan + UBSan (the test build).
# HV_SANITIZE=thread:  TSan (the concurrency test build).
if(HV_SANITIZE STREQUAL "address")
	add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
		-fno-sanitize-recover=undefined)
	add_link_options(-fsanitize=address,undefined)
elseif(HV_SANITIZE STREQUAL "thread")
	add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
	add_link_options(-fsanitize=thread)
elseif(NOT HV_SANITIZE STREQUAL "")
	message(FATAL_ERROR "HV_SANITIZE must be '', 'address' or 'thread'")
endif()

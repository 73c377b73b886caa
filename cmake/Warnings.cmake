# Warnings for all project code. -Werror is on by default (HV_WERROR).
add_compile_options(-Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes
	-Wmissing-prototypes -Wno-unused-parameter -Wno-missing-field-initializers
	-fno-strict-aliasing -D_GNU_SOURCE)
if(HV_WERROR)
	add_compile_options(-Werror)
endif()

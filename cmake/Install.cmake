# Install rules (GNUInstallDirs) and the Debian package (CPack DEB).
#
#   cmake --install build/release --prefix /tmp/x   a relocatable tree:
#       sbin/migrated, libexec/migrated/migrated-vmm (found from sbin
#       through MIGD_VMM_RELDIR, migrated/host/CMakeLists.txt),
#       bin/{migratectl,migrate-send,migrate-recv,dirtyrate,hvbench},
#       etc/migrated/migrated.conf, lib/systemd/system/migrated.service,
#       share/man/man{1,5,8}, share/doc/migrated,
#       share/bash-completion/completions/{migratectl,migrated,
#       migrate-send,migrate-recv,dirtyrate,hvbench}
#   tools/package.sh   the same into a .deb (prefix /usr, config in /etc)
#
# Every destination is relative to the prefix, so that --prefix and
# DESTDIR both work; the package sets CMAKE_INSTALL_SYSCONFDIR=/etc.

# `make install` and cpack do not rebuild the whole tree first (tests
# included): build what you install, as tools/package.sh does.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

# The unit in the build tree (to copy by hand) names the configured
# prefix; the installed one is written at install time, so that it names
# where `cmake --install --prefix DIR` (or the package) puts the daemon.
set(MIGD_SBINDIR ${CMAKE_INSTALL_FULL_SBINDIR})
set(MIGD_SYSCONFDIR ${CMAKE_INSTALL_FULL_SYSCONFDIR})
set(MIGD_DOCDIR ${CMAKE_INSTALL_FULL_DOCDIR})
configure_file(${CMAKE_SOURCE_DIR}/tools/systemd/migrated.service.in
	${CMAKE_BINARY_DIR}/tools/systemd/migrated.service @ONLY)

install(TARGETS migrated RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR})
install(TARGETS migrated-vmm
	RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/migrated)
foreach(t migratectl migrate-send migrate-recv dirtyrate hvbench)
	if(TARGET ${t})
		install(TARGETS ${t} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
	endif()
endforeach()

install(FILES ${CMAKE_SOURCE_DIR}/tools/systemd/migrated.conf
	DESTINATION ${CMAKE_INSTALL_SYSCONFDIR}/migrated)
# At install time: ${CMAKE_INSTALL_PREFIX} is then --prefix's (or the
# package's /usr); an absolute SYSCONFDIR (/etc) stays as it is.
set(migd_unit_in ${CMAKE_SOURCE_DIR}/tools/systemd/migrated.service.in)
set(migd_unit_out ${CMAKE_BINARY_DIR}/tools/systemd/install/migrated.service)
install(CODE "
	set(p \"\${CMAKE_INSTALL_PREFIX}\")
	set(MIGD_SBINDIR \"\${p}/${CMAKE_INSTALL_SBINDIR}\")
	set(MIGD_DOCDIR \"\${p}/${CMAKE_INSTALL_DOCDIR}\")
	if(IS_ABSOLUTE \"${CMAKE_INSTALL_SYSCONFDIR}\")
		set(MIGD_SYSCONFDIR \"${CMAKE_INSTALL_SYSCONFDIR}\")
	else()
		set(MIGD_SYSCONFDIR \"\${p}/${CMAKE_INSTALL_SYSCONFDIR}\")
	endif()
	configure_file(\"${migd_unit_in}\" \"${migd_unit_out}\" @ONLY)
")
install(FILES ${migd_unit_out} DESTINATION lib/systemd/system)

install(FILES README.md LICENSE docs/api.md docs/architecture.md
	docs/install.md docs/reliability.md docs/memslots.md docs/vm.md
	docs/kvm-dirty-tracking.md docs/soft-mmu.md docs/workload.md
	docs/migration-protocol.md docs/processes.md docs/fleet.md
	docs/testing.md docs/design-choices.md
	DESTINATION ${CMAKE_INSTALL_DOCDIR})

foreach(sec 1 5 8)
	file(GLOB pages ${CMAKE_SOURCE_DIR}/docs/man/*.${sec})
	install(FILES ${pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${sec})
endforeach()
install(FILES ${CMAKE_SOURCE_DIR}/tools/completion/migratectl
	DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions)
# bash-completion loads a command's file by its name: one copy each.
foreach(t migrated migrate-send migrate-recv dirtyrate hvbench)
	install(FILES ${CMAKE_SOURCE_DIR}/tools/completion/migrated-tools
		DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions
		RENAME ${t})
endforeach()

# --- Debian package ------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME migrated)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "The migrated authors <migrated@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
	"live-migration and dirty-page-tracking daemon for virtual machines")
set(CPACK_PACKAGE_DESCRIPTION
	"migrated runs VMs on KVM or a software MMU, one worker process per VM,
and migrates them live to another host over mutual TLS 1.3.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Absolute destinations (CMAKE_INSTALL_SYSCONFDIR=/etc) go under the
# package root, not the build machine's /etc. With DESTDIR the package
# takes CMAKE_INSTALL_PREFIX: /usr from tools/package.sh.
set(CPACK_SET_DESTDIR ON)
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# adduser: the postinst makes the system user; systemd for the unit.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "systemd")
# The config file is a conffile wherever SYSCONFDIR puts it in the
# package: /etc from tools/package.sh, /usr/etc from a build configured
# with the default (the install test packages its own build).
if(IS_ABSOLUTE ${CMAKE_INSTALL_SYSCONFDIR})
	set(MIGD_CONF_PKG ${CMAKE_INSTALL_SYSCONFDIR})
else()
	set(MIGD_CONF_PKG /usr/${CMAKE_INSTALL_SYSCONFDIR})
endif()
configure_file(${CMAKE_SOURCE_DIR}/tools/debian/conffiles.in
	${CMAKE_BINARY_DIR}/tools/debian/conffiles @ONLY)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
	${CMAKE_SOURCE_DIR}/tools/debian/postinst
	${CMAKE_SOURCE_DIR}/tools/debian/prerm
	${CMAKE_SOURCE_DIR}/tools/debian/postrm
	${CMAKE_BINARY_DIR}/tools/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)

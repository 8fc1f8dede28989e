# find_package(attendre) from an install prefix: the libraries (static, with
# the embedded shaders they need), the public headers and attendreConfig.cmake.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set_target_properties(attendre_shaders PROPERTIES EXPORT_NAME shaders)
install(TARGETS attendre attendre_c attendre_core attendre_gguf attendre_text attendre_model attendre_run attendre_reference attendre_shaders
        EXPORT attendreTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/attendre DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT attendreTargets NAMESPACE attendre:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attendre)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/attendreConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/attendreConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attendre)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/attendreConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/attendreConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/attendreConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attendre)

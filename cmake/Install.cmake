# Installs the SDK headers, the core library, the CLI, the plugins (see
# tessera_add_plugin) and a CMake package so that third parties can write
# find_package(Tessera) and tessera_add_plugin().
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/core/include/tessera DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS tessera_sdk EXPORT TesseraTargets)
install(TARGETS tessera_core EXPORT TesseraTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT TesseraTargets NAMESPACE Tessera:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Tessera)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/TesseraConfig.cmake.in
  ${PROJECT_BINARY_DIR}/TesseraConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Tessera)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/TesseraConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/TesseraConfig.cmake
  ${PROJECT_BINARY_DIR}/TesseraConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/TesseraPlugin.cmake
  ${PROJECT_SOURCE_DIR}/cmake/tessera_plugin.map
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Tessera)

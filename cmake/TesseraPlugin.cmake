# tessera_add_plugin(<name> SOURCES <files...> [LIBS <libs...>])
#
# Builds one plugin: a MODULE library that exports only the
# TESSERA_PLUGIN_ENTRY alias (hidden visibility, and on ELF platforms the
# version script beside this file), placed in the plugin folder of the build
# tree and installed into <prefix>/lib/tessera/plugins. Used in tree and,
# through find_package(Tessera), by third-party plugins.
function(tessera_add_plugin name)
  cmake_parse_arguments(P "" "" "SOURCES;LIBS" ${ARGN})
  add_library(${name} MODULE ${P_SOURCES})
  if(TARGET Tessera::sdk)
    target_link_libraries(${name} PRIVATE Tessera::sdk)
  else()
    target_link_libraries(${name} PRIVATE tessera_sdk)
  endif()
  if(P_LIBS)
    target_link_libraries(${name} PRIVATE ${P_LIBS})
  endif()
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(UNIX AND NOT APPLE)
    set(version_script ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/tessera_plugin.map)
    target_link_options(${name} PRIVATE "LINKER:--version-script=${version_script}")
    set_property(TARGET ${name} APPEND PROPERTY LINK_DEPENDS ${version_script})
  endif()
  if(NOT DEFINED TESSERA_PLUGIN_BUILD_DIR)
    set(TESSERA_PLUGIN_BUILD_DIR ${CMAKE_BINARY_DIR}/plugins)
  endif()
  set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${TESSERA_PLUGIN_BUILD_DIR})
  if(NOT DEFINED TESSERA_PLUGIN_SUBDIR)
    set(TESSERA_PLUGIN_SUBDIR ${CMAKE_INSTALL_LIBDIR}/tessera/plugins)
  endif()
  install(TARGETS ${name} LIBRARY DESTINATION ${TESSERA_PLUGIN_SUBDIR})
  # The project's tessera_runtime target builds every plugin listed here.
  set_property(GLOBAL APPEND PROPERTY TESSERA_PLUGIN_TARGETS ${name})
endfunction()

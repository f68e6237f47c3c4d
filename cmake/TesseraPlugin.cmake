# tessera_add_plugin(<name> SOURCES <files...> [LIBS <libs...>])
#
# Builds one plugin: a MODULE library with hidden symbols (only the
# TESSERA_PLUGIN_ENTRY alias is exported), placed in the plugin folder of the
# build tree and installed into <prefix>/lib/tessera/plugins. Used in tree and,
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
  if(NOT DEFINED TESSERA_PLUGIN_BUILD_DIR)
    set(TESSERA_PLUGIN_BUILD_DIR ${CMAKE_BINARY_DIR}/plugins)
  endif()
  set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${TESSERA_PLUGIN_BUILD_DIR})
  if(NOT DEFINED TESSERA_PLUGIN_SUBDIR)
    set(TESSERA_PLUGIN_SUBDIR ${CMAKE_INSTALL_LIBDIR}/tessera/plugins)
  endif()
  install(TARGETS ${name} LIBRARY DESTINATION ${TESSERA_PLUGIN_SUBDIR})
endfunction()

# cmake --install: headers under <prefix>/include/kvsim/{model,files,sim,traces,fleet,replay}, the static
# libraries under <prefix>/lib, and find_package(kvsim) with the targets kvsim::core,
# kvsim::sim, kvsim::traces, kvsim::fleet and kvsim::replay (examples/consumer/ uses them).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_kv_exported kv_model kv_files kv_sim kv_traces kv_trace_proto kv_fleet kv_replay)
set(KVSIM_INSTALL_CUDA OFF)
if(TARGET kv_gpu)
  list(APPEND _kv_exported kv_gpu kv_gpu_ref)
  set(KVSIM_INSTALL_CUDA ON)
endif()
set_target_properties(kv_model PROPERTIES EXPORT_NAME core)
set_target_properties(kv_files PROPERTIES EXPORT_NAME files)
set_target_properties(kv_sim PROPERTIES EXPORT_NAME sim)
set_target_properties(kv_traces PROPERTIES EXPORT_NAME traces)
set_target_properties(kv_trace_proto PROPERTIES EXPORT_NAME trace_proto)
set_target_properties(kv_fleet PROPERTIES EXPORT_NAME fleet)
set_target_properties(kv_replay PROPERTIES EXPORT_NAME replay)

install(TARGETS ${_kv_exported} EXPORT kvsimTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kvsim)
foreach(_dir model files sim traces fleet replay)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${_dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kvsim/${_dir}
          FILES_MATCHING PATTERN "*.h" PATTERN "mutants" EXCLUDE)
endforeach()
install(EXPORT kvsimTargets NAMESPACE kvsim:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kvsim)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kvsimConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/kvsimConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kvsim)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kvsimConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/kvsimConfig.cmake ${PROJECT_BINARY_DIR}/kvsimConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kvsim)

# cmake --install: the toolchain a user needs to compile a model and use it
# from C or C++, under any prefix, relocatable (nothing below names the
# prefix: the compiler finds lib/ and include/ from its own folder, the CMake
# package and the pkg-config file from theirs).
#
#   bin/onnxc                                the compiler
#   lib/libonnxc_runtime.a                   the runtime every model.so embeds
#   include/onnxc/{onnxc.h,model_abi.h}      what a generated model header includes
#   lib/cmake/onnxc/onnxcConfig*.cmake       find_package(onnxc): onnxc::headers,
#                                            onnxc::runtime, onnxc::onnxc (the tool)
#   lib/pkgconfig/onnxc.pc                   pkg-config --cflags onnxc
#
# The runtime is a static archive, not a shared library: a compiled model.so
# carries the whole runtime (one file to ship next to the generated header,
# no version skew between a model and a runtime found at load time). A
# program that links model.so needs only the headers (onnxc::headers);
# onnxc::runtime is for linking an `onnxc compile --emit=obj` object into a
# program directly. Everything is in the component `toolchain`; the Python
# package installs its own component (python/CMakeLists.txt).
include(CMakePackageConfigHelpers)

set(ONNXC_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/onnxc)

install(TARGETS onnxc EXPORT onnxcTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT toolchain)
install(TARGETS onnxc_runtime EXPORT onnxcTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        COMPONENT toolchain)
# The tokenizers' and chat templates' shared library (text/) and its headers; the tool finds it
# beside its bin/.
install(TARGETS onnxc_text LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT toolchain)
# libsentencepiece's shim, which libonnxc_text loads from its own folder.
install(TARGETS onnxc_spm LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT toolchain)
install(FILES ${PROJECT_SOURCE_DIR}/text/include/onnxc/onnxc_tokenizer.h
              ${PROJECT_SOURCE_DIR}/text/include/onnxc/onnxc_chat.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/onnxc COMPONENT toolchain)
# Text generation over a model.so's generator (onnxc_text_generate.h), in the same library.
install(FILES ${PROJECT_SOURCE_DIR}/text/include/onnxc/onnxc_text_generate.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/onnxc COMPONENT toolchain)
set_target_properties(onnxc PROPERTIES INSTALL_RPATH "$ORIGIN/${ONNXC_LIB_FROM_BIN}")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/onnxc
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT toolchain FILES_MATCHING PATTERN "*.h")

# onnxc::headers: the include folder alone (for programs that link a model.so).
add_library(onnxc_headers INTERFACE)
target_include_directories(onnxc_headers INTERFACE
                           $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/runtime/include>
                           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(onnxc_runtime PROPERTIES EXPORT_NAME runtime)
set_target_properties(onnxc_headers PROPERTIES EXPORT_NAME headers)
install(TARGETS onnxc_headers EXPORT onnxcTargets COMPONENT toolchain)

install(EXPORT onnxcTargets NAMESPACE onnxc:: DESTINATION ${ONNXC_CMAKE_INSTALL_DIR}
        COMPONENT toolchain)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/onnxcConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/cmake/onnxcConfig.cmake
                              INSTALL_DESTINATION ${ONNXC_CMAKE_INSTALL_DIR}
                              PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/onnxcConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/onnxcConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/onnxcConfigVersion.cmake
        DESTINATION ${ONNXC_CMAKE_INSTALL_DIR} COMPONENT toolchain)

# pkg-config: the prefix is computed from the .pc file's own folder, so a
# moved prefix still works.
file(RELATIVE_PATH ONNXC_PREFIX_FROM_PKGCONFIG /onnxc-prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig
     /onnxc-prefix)
configure_file(${CMAKE_CURRENT_LIST_DIR}/onnxc.pc.in ${PROJECT_BINARY_DIR}/cmake/onnxc.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake/onnxc.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT toolchain)

# The license travels with the prefix (Apache-2.0 asks that it accompany copies).
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/NOTICE
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT toolchain)

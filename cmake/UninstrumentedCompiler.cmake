# The IR and codegen libraries of the normal build ONNXC_UNINSTRUMENTED_BUILD, imported under
# their own target names for a ThreadSanitizer build (see ONNXC_UNINSTRUMENTED_BUILD in the
# top-level CMakeLists.txt). Their usage requirements mirror ir/ and codegen/CMakeLists.txt; the
# runtime they call is this build's instrumented onnxc_runtime.
set(uninstrumented ${ONNXC_UNINSTRUMENTED_BUILD})
foreach(archive ir/libonnxc_ir.a codegen/libonnxc_codegen.a)
  if(NOT EXISTS ${uninstrumented}/${archive})
    message(FATAL_ERROR "ONNXC_UNINSTRUMENTED_BUILD=${uninstrumented} has no ${archive}: build it first")
  endif()
endforeach()

add_library(onnxc_ir STATIC IMPORTED)
set_target_properties(onnxc_ir PROPERTIES IMPORTED_LOCATION ${uninstrumented}/ir/libonnxc_ir.a)
target_include_directories(onnxc_ir INTERFACE ${PROJECT_SOURCE_DIR})
target_link_libraries(onnxc_ir INTERFACE Boost::boost Threads::Threads)

# lld in process, when the machine has it (codegen/CMakeLists.txt links it privately; a static
# archive passes that on to whatever links it).
set(codegen_links onnxc_ir onnxc_runtime LLVM)
find_package(LLD CONFIG QUIET HINTS ${LLVM_INSTALL_PREFIX}/lib/cmake/lld ${LLVM_DIR}/../lld)
if(LLD_FOUND AND TARGET lldELF)
  list(APPEND codegen_links lldELF lldCommon)
endif()
add_library(onnxc_codegen STATIC IMPORTED)
set_target_properties(onnxc_codegen PROPERTIES
  IMPORTED_LOCATION ${uninstrumented}/codegen/libonnxc_codegen.a)
target_include_directories(onnxc_codegen INTERFACE ${PROJECT_SOURCE_DIR})
target_include_directories(onnxc_codegen SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS})
target_compile_definitions(onnxc_codegen INTERFACE ${LLVM_DEFINITIONS})
target_link_libraries(onnxc_codegen INTERFACE ${codegen_links})

# Precompiled headers for the targets whose files include LLVM's IR headers (codegen) and
# GoogleTest (the unit tests): those headers were a third of each such file's compile time,
# about two minutes of a cold build on two cores (the CI's). The IR's libraries (ir, passes,
# frontend, driver, the CLI) precompile the standard headers and the IR's core, and the
# tokenizers the standard headers: a third to a half of their files' time again, which the
# AddressSanitizer build (scripts/sanitize.sh) compiles a second time. Off by default under a compiler
# launcher: ccache then caches whole files, which serves a rebuild better, and it does not
# cache a file compiled with a precompiled header without sloppiness settings of its own.
if(CMAKE_CXX_COMPILER_LAUNCHER)
  set(onnxc_pch_default OFF)
else()
  set(onnxc_pch_default ON)
endif()
option(ONNXC_PCH "precompile common headers per library (LLVM IR, GoogleTest, the standard library, the IR)"
       ${onnxc_pch_default})

# onnxc_precompile_headers(TARGET HEADER): HEADER (under cmake/pch/) force-included first in
# every C++ file of TARGET, compiled once per target with its flags.
function(onnxc_precompile_headers target header)
  if(ONNXC_PCH)
    target_precompile_headers(${target} PRIVATE
                              "$<$<COMPILE_LANGUAGE:CXX>:${PROJECT_SOURCE_DIR}/cmake/pch/${header}>")
  endif()
endfunction()

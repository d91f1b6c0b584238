# cmake -DCOMMITTED=docs/SUPPORTED_OPS.md -DGENERATED=build/docs/ops-table.md -P CompareOpsTable.cmake
# Fails, saying how to fix it, when the committed supported-ops page is not the generated one.
if(NOT EXISTS "${GENERATED}")
  message(FATAL_ERROR "${GENERATED} is missing: build the ops_table target (ninja ops_table)")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${COMMITTED}" "${GENERATED}"
                RESULT_VARIABLE differ)
if(differ)
  message(FATAL_ERROR "docs/SUPPORTED_OPS.md is stale: the registries changed. "
                      "Copy the generated table: cp ${GENERATED} ${COMMITTED}")
endif()

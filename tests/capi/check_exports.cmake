# cmake -DLIBRARY=<libattendre_c.so> [-DNO_EXCEPTIONS=ON] -P check_exports.cmake:
# fails unless every defined dynamic symbol is one of attendre.h's C
# functions (no C++ symbol of the layers inside leaks into the stable ABI),
# and with NO_EXCEPTIONS unless nothing in it throws or catches (no import of
# __cxa_throw or __cxa_begin_catch: every object was built with
# -fno-exceptions; the standard library's own failures stay inside it).
find_program(NM nm REQUIRED)
execute_process(COMMAND ${NM} -D --defined-only ${LIBRARY} OUTPUT_VARIABLE symbols RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "nm failed on ${LIBRARY}")
endif()
string(REPLACE "\n" ";" lines "${symbols}")
set(exported 0)
foreach(line ${lines})
  string(REGEX REPLACE "^[0-9a-f]* *[A-Za-z] " "" name "${line}")
  if(name MATCHES "^attendre_")
    math(EXPR exported "${exported} + 1")
  elseif(NOT name MATCHES "^(_init|_fini|_edata|_end|__bss_start)$" AND NOT name STREQUAL "")
    message(FATAL_ERROR "${LIBRARY} exports ${name}")
  endif()
endforeach()
if(exported LESS 50)
  message(FATAL_ERROR "${LIBRARY} exports only ${exported} attendre_ functions")
endif()
message(STATUS "${exported} attendre_ functions exported, nothing else")

if(NO_EXCEPTIONS)
  execute_process(COMMAND ${NM} -D --undefined-only ${LIBRARY} OUTPUT_VARIABLE imports RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "nm failed on ${LIBRARY}")
  endif()
  foreach(symbol __cxa_throw __cxa_begin_catch __cxa_rethrow)
    string(FIND "${imports}" " ${symbol}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${LIBRARY} imports ${symbol}: part of it was built with exceptions")
    endif()
  endforeach()
  message(STATUS "no __cxa_throw, __cxa_begin_catch or __cxa_rethrow imported: built without exceptions")
endif()

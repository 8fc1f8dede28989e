# What every fuzz target is made of, shared by the corpus replay of the
# normal build (fuzz/CMakeLists.txt) and the libFuzzer build
# (fuzz/libfuzzer/CMakeLists.txt), so that a new target is one new file.
#
# Convention: fuzz/<name>_fuzz.cpp defines LLVMFuzzerTestOneInput and is the
# target <name>_fuzz; its seed corpus is fuzz/corpus/<name>/ and its optional
# libFuzzer dictionary fuzz/<name>.dict. Every target links the Vulkan-free
# library (lib/core, gguf, text, model, run), the tools' .npy reader (apps/npy) and the
# replay tool's command-line sources.
get_filename_component(ATTENDRE_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR} ABSOLUTE)
get_filename_component(ATTENDRE_FUZZ_ROOT ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)

file(GLOB ATTENDRE_FUZZ_TARGET_SOURCES CONFIGURE_DEPENDS ${ATTENDRE_FUZZ_DIR}/*_fuzz.cpp)
set(ATTENDRE_FUZZ_NAMES)
foreach(source ${ATTENDRE_FUZZ_TARGET_SOURCES})
  get_filename_component(target ${source} NAME_WE)
  string(REGEX REPLACE "_fuzz$" "" name ${target})
  list(APPEND ATTENDRE_FUZZ_NAMES ${name})
endforeach()

set(ATTENDRE_FUZZ_SUPPORT_SOURCES ${ATTENDRE_FUZZ_ROOT}/apps/attendre-replay/cli.cpp
  ${ATTENDRE_FUZZ_ROOT}/apps/common/arguments.cpp ${ATTENDRE_FUZZ_ROOT}/apps/common/human_bytes.cpp
  ${ATTENDRE_FUZZ_ROOT}/apps/npy/npy.cpp)
set(ATTENDRE_FUZZ_INCLUDE_DIRS
  ${ATTENDRE_FUZZ_ROOT}/include ${ATTENDRE_FUZZ_ROOT}/lib ${ATTENDRE_FUZZ_ROOT}/shaders ${ATTENDRE_FUZZ_ROOT}/apps ${ATTENDRE_FUZZ_ROOT}/apps/attendre-replay ${ATTENDRE_FUZZ_DIR})

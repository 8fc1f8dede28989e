# The sources of each library layer and what the Vulkan-free layers need
# from outside, in one place: lib/CMakeLists.txt builds the layers from
# them, and the libFuzzer build (fuzz/libfuzzer) rebuilds core and io with
# its sanitizers from the same lists.
get_filename_component(ATTENDRE_ROOT ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)

# attendre_layer_sources(<out-var> <layer>...): lib/<layer>/*.cpp of each layer.
function(attendre_layer_sources out)
  set(sources)
  foreach(layer ${ARGN})
    file(GLOB found CONFIGURE_DEPENDS ${ATTENDRE_ROOT}/lib/${layer}/*.cpp)
    list(APPEND sources ${found})
  endforeach()
  set(${out} ${sources} PARENT_SCOPE)
endfunction()

# The text layer's outside libraries: PCRE2 (8-bit, with Unicode properties)
# runs the tokenizers' pre-tokenizer regexes.
# A parent project that builds PCRE2 itself (the Android app: the NDK has
# none, nor pkg-config) names its target in ATTENDRE_PCRE2_TARGET; the text
# layer then links that under the same name, PkgConfig::PCRE2.
macro(attendre_find_io_dependencies)
  if(ATTENDRE_PCRE2_TARGET)
    if(NOT TARGET PkgConfig::PCRE2)
      add_library(PkgConfig::PCRE2 INTERFACE IMPORTED GLOBAL)
      target_link_libraries(PkgConfig::PCRE2 INTERFACE ${ATTENDRE_PCRE2_TARGET})
    endif()
  else()
    find_package(PkgConfig REQUIRED)
    pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET GLOBAL libpcre2-8)
  endif()
endmacro()

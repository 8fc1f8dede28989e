# Fails when a file includes a layer above its own (cmake -DROOT=<tree> -P
# CheckLayers.cmake): the library's dependencies point one way,
#   core <- io <- reference          (Vulkan-free)
#   core <- vulkan <- kernels <- gpu (kernels and gpu may use io too)
#   capi (the C API, over the public headers): no layer includes it
# shaders/interface/ headers (constants and push-constant layouts shared by
# GLSL and C++) sit below every layer and include only each other, and
# public headers (include/attendre/) include only public headers.
cmake_minimum_required(VERSION 3.25)
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source tree> -P CheckLayers.cmake")
endif()

set(allowed_core core interface)
set(allowed_io core io interface)
set(allowed_reference core io reference interface)
set(allowed_vulkan core vulkan interface)
set(allowed_kernels core vulkan kernels interface)
set(allowed_gpu core io vulkan kernels gpu interface)
set(allowed_capi core capi)  # the C API uses the public headers; nothing includes it
set(layers core io reference vulkan kernels gpu capi)

set(violations "")
foreach(layer ${layers})
  file(GLOB files ${ROOT}/lib/${layer}/*.hpp ${ROOT}/lib/${layer}/*.cpp)
  foreach(file ${files})
    file(STRINGS ${file} includes REGEX "^#include \"[a-z_]+/")
    foreach(line ${includes})
      string(REGEX REPLACE "^#include \"([a-z_]+)/.*" "\\1" target "${line}")
      if(NOT target IN_LIST allowed_${layer})
        file(RELATIVE_PATH name ${ROOT} ${file})
        string(APPEND violations "${name} (layer ${layer}) includes ${target}/: ${line}\n")
      endif()
    endforeach()
    # The reference is for tests and tools: the Vulkan library and the C API never need it.
    if(layer STREQUAL "vulkan" OR layer STREQUAL "kernels" OR layer STREQUAL "gpu" OR layer STREQUAL "capi")
      file(STRINGS ${file} public REGEX "^#include <attendre/reference/")
      foreach(line ${public})
        file(RELATIVE_PATH name ${ROOT} ${file})
        string(APPEND violations "${name} (layer ${layer}) includes the reference: ${line}\n")
      endforeach()
    endif()
  endforeach()
endforeach()

file(GLOB interface_headers ${ROOT}/shaders/interface/*.h)
foreach(file ${interface_headers})
  file(STRINGS ${file} includes REGEX "^#include \"")
  foreach(line ${includes})
    if(NOT line MATCHES "^#include \"interface/")
      file(RELATIVE_PATH name ${ROOT} ${file})
      string(APPEND violations "${name} (shader interface) includes outside the interface: ${line}\n")
    endif()
  endforeach()
endforeach()

file(GLOB_RECURSE public_headers ${ROOT}/include/attendre/*.hpp)
foreach(file ${public_headers})
  file(STRINGS ${file} includes REGEX "^#include \"")
  foreach(line ${includes})
    file(RELATIVE_PATH name ${ROOT} ${file})
    string(APPEND violations "${name} (public header) includes a private header: ${line}\n")
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "includes against the layering:\n${violations}")
endif()
message(STATUS "layering: every include points down")

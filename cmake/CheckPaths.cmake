# Fails when a comment, string or document of the tree names a path of the
# tree that does not exist (cmake -DROOT=<tree> -P CheckPaths.cmake): a
# comment that points at a moved file sends its reader nowhere.
#
# A path is a word that starts with one of the tree's top folders (lib/,
# include/, apps/, tests/, shaders/, cmake/, scripts/, docs/, fuzz/) and is
# not the tail of a longer path (build/tests/... names a build output, not a
# source). It is checked relative to ROOT:
#   lib/vulkan/api.*, lib/gguf/quant_*   a glob: at least one file matches
#   apps/android/.../x.c               elided: not checked
#   a path in the files of tests/paths/ (the checker's own fixture) is
#   checked like any other when ROOT is that fixture.
cmake_minimum_required(VERSION 3.25)
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source tree> -P CheckPaths.cmake")
endif()

set(top_folders "lib|include|apps|tests|shaders|cmake|scripts|docs|fuzz")
set(sources "")
foreach(pattern *.md *.cpp *.hpp *.h *.c *.comp *.glsl *.cmake *.txt *.sh *.java *.kt run cross-aarch64)
  file(GLOB_RECURSE found RELATIVE ${ROOT} ${ROOT}/${pattern})
  list(APPEND sources ${found})
endforeach()
# Build folders, the fuzz corpora (inputs, not prose) and the fixture of this
# checker's own rejection test (a tree of its own) are not the tree's text.
list(FILTER sources EXCLUDE REGEX "^(build[^/]*|out|fuzz/corpus|tests/paths)/")
list(REMOVE_DUPLICATES sources)

set(missing "")
foreach(name ${sources})
  file(READ ${ROOT}/${name} text)
  # Brackets and semicolons mean something to CMake's lists: blank them, and
  # prefix a space so that a path at the very start has a left neighbour too.
  string(REGEX REPLACE "[][;]" " " text " ${text}")
  string(REGEX MATCHALL "[^A-Za-z0-9_./*-](${top_folders})/[A-Za-z0-9_./*-]*[A-Za-z0-9_*]" words "${text}")
  foreach(word ${words})
    string(SUBSTRING "${word}" 1 -1 path)
    if(path MATCHES "\\.\\.\\.")
      continue()  # elided
    endif()
    if(path MATCHES "\\*")
      file(GLOB matches "${ROOT}/${path}")
      if(matches)
        continue()
      endif()
    elseif(EXISTS "${ROOT}/${path}")
      continue()
    endif()
    string(APPEND missing "${name}: names ${path}, which does not exist\n")
  endforeach()
endforeach()

if(missing)
  message(FATAL_ERROR "paths named in the tree that do not exist:\n${missing}")
endif()
list(LENGTH sources count)
message(STATUS "every path named in ${count} files exists")

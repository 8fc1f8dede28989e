# libattendre_jni.so from attendre_jni.c, in one place for both builds of
# it: the Android app's (CMakeLists.txt here, NDK) and the host test's
# (tests/jni, a desktop JDK), so that the test runs the code the app ships.
#   attendre_jni_library(<target>)   needs attendre_c and jni.h in reach
get_filename_component(ATTENDRE_JNI_SOURCE ${CMAKE_CURRENT_LIST_DIR}/attendre_jni.c ABSOLUTE)

function(attendre_jni_library target)
  add_library(${target} SHARED ${ATTENDRE_JNI_SOURCE})
  # System.loadLibrary("attendre_jni") looks for libattendre_jni.so.
  set_target_properties(${target} PROPERTIES OUTPUT_NAME attendre_jni C_STANDARD 11 C_STANDARD_REQUIRED ON
                        C_EXTENSIONS OFF C_VISIBILITY_PRESET hidden)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -pedantic)
  # attendre_c is static: its C++ and the layers below it go into this one
  # .so, and only the JNIEXPORT functions leave it (the library's C++
  # symbols stay local, so no other copy in the process can clash).
  target_link_libraries(${target} PRIVATE attendre_c)
  target_link_options(${target} PRIVATE -Wl,--exclude-libs,ALL -Wl,--no-undefined)
  # Google Play requires 16 KiB page alignment of native libraries for
  # Android 15 devices with 16 KiB pages: every LOAD segment aligned to
  # 16 KiB. NDK r28 and later do it by default, r27 when Gradle passes
  # -DANDROID_SUPPORT_FLEXIBLE_PAGE_SIZES=ON (app/build.gradle.kts does);
  # this flag makes it hold with any NDK, and the host test checks it.
  target_link_options(${target} PRIVATE -Wl,-z,max-page-size=16384)
endfunction()

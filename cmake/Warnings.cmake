# attendre_warnings(<target>): the project's warnings on its own targets,
# privately, so that nothing leaks to a project that embeds or installs it.
option(ATTENDRE_WERROR "Treat compiler warnings as errors" OFF)
function(attendre_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
    -Wno-missing-field-initializers  # Vulkan structs are brace-initialized with sType only
    $<$<BOOL:${ATTENDRE_WERROR}>:-Werror>)
endfunction()

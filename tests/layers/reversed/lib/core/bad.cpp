// A planted violation: the core layer reaching up into the GPU layer.
#include "gpu/stack_engine.hpp"

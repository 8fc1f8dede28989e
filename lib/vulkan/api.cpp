#include "vulkan/api.hpp"

#include <attendre/status.hpp>

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace attendre::vk {

PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define ATTENDRE_VK_DEFINE(name) PFN_##name name = nullptr;
ATTENDRE_VK_GLOBAL_COMMANDS(ATTENDRE_VK_DEFINE)
ATTENDRE_VK_INSTANCE_COMMANDS(ATTENDRE_VK_DEFINE)
#undef ATTENDRE_VK_DEFINE

namespace {

std::mutex loading;
bool instance_commands_loaded = false;

// The loader as Android and desktop Linux name it.
void* open_loader() {
  for (const char* name : {"libvulkan.so.1", "libvulkan.so"})
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return handle;
  return nullptr;
}

}  // namespace

Status load_global_commands(PFN_vkGetInstanceProcAddr custom) {
  std::lock_guard lock(loading);
  if (vkGetInstanceProcAddr && !custom) return {};
  if (custom) {
    vkGetInstanceProcAddr = custom;
  } else {
    void* loader = open_loader();  // kept open for the process's lifetime
    if (!loader) return {ErrorCode::unsupported, std::string("no Vulkan loader found (libvulkan.so.1): ") + dlerror()};
    vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(loader, "vkGetInstanceProcAddr"));
    if (!vkGetInstanceProcAddr) return {ErrorCode::unsupported, "the Vulkan loader has no vkGetInstanceProcAddr"};
  }
#define ATTENDRE_VK_LOAD(name) name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(VK_NULL_HANDLE, #name));
  ATTENDRE_VK_GLOBAL_COMMANDS(ATTENDRE_VK_LOAD)
#undef ATTENDRE_VK_LOAD
  if (!vkCreateInstance) return {ErrorCode::unsupported, "the Vulkan loader has no vkCreateInstance"};
  return {};
}

Status load_instance_commands(VkInstance instance) {
  std::lock_guard lock(loading);
  if (instance_commands_loaded) return {};
  std::string missing;
#define ATTENDRE_VK_LOAD(name)                                                    \
  name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(instance, #name)); \
  if (!name) missing += std::string(missing.empty() ? "" : ", ") + #name;
  ATTENDRE_VK_INSTANCE_COMMANDS(ATTENDRE_VK_LOAD)
#undef ATTENDRE_VK_LOAD
  if (!missing.empty()) return {ErrorCode::unsupported, "the Vulkan loader lacks Vulkan 1.1 commands: " + missing};
  instance_commands_loaded = true;
  return {};
}

}  // namespace attendre::vk

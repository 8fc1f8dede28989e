// The Vulkan entry points attendre calls, loaded at run time: the loader
// library is opened with dlopen (or an application hands over its own
// vkGetInstanceProcAddr), so attendre never links libvulkan, works where
// applications load Vulkan themselves, and its function pointers live in
// this namespace, where they cannot clash with an application's own
// vkCreateInstance and friends. Code inside attendre::vk calls them by their
// usual names; elsewhere as vk::vkName.
//
// Instance and device commands are loaded through vkGetInstanceProcAddr of
// the first instance: for device commands that gives the loader's
// trampolines, which dispatch on the handle, so every instance and device
// the process makes can use the same pointers.
#pragma once

#include <vulkan/vulkan.h>  // with VK_NO_PROTOTYPES (the build defines it for attendre's targets)

#include <attendre/status.hpp>

namespace attendre::vk {

#define ATTENDRE_VK_GLOBAL_COMMANDS(X) \
  X(vkCreateInstance)                  \
  X(vkEnumerateInstanceLayerProperties) \
  X(vkEnumerateInstanceExtensionProperties)

#define ATTENDRE_VK_INSTANCE_COMMANDS(X)         \
  X(vkDestroyInstance)                           \
  X(vkEnumeratePhysicalDevices)                  \
  X(vkGetPhysicalDeviceProperties)               \
  X(vkGetPhysicalDeviceProperties2)              \
  X(vkGetPhysicalDeviceFeatures2)                \
  X(vkGetPhysicalDeviceQueueFamilyProperties)    \
  X(vkGetPhysicalDeviceMemoryProperties)         \
  X(vkGetPhysicalDeviceFormatProperties)         \
  X(vkEnumerateDeviceExtensionProperties)        \
  X(vkCreateDevice)                              \
  X(vkGetDeviceProcAddr)                         \
  X(vkDestroyDevice)                             \
  X(vkGetDeviceQueue)                            \
  X(vkDeviceWaitIdle)                            \
  X(vkQueueSubmit)                               \
  X(vkCreateBuffer)                              \
  X(vkDestroyBuffer)                             \
  X(vkCreateBufferView)                          \
  X(vkDestroyBufferView)                         \
  X(vkGetBufferMemoryRequirements)               \
  X(vkAllocateMemory)                            \
  X(vkFreeMemory)                                \
  X(vkBindBufferMemory)                          \
  X(vkMapMemory)                                 \
  X(vkFlushMappedMemoryRanges)                   \
  X(vkInvalidateMappedMemoryRanges)              \
  X(vkCreateShaderModule)                        \
  X(vkDestroyShaderModule)                       \
  X(vkCreateDescriptorSetLayout)                 \
  X(vkDestroyDescriptorSetLayout)                \
  X(vkCreatePipelineLayout)                      \
  X(vkDestroyPipelineLayout)                     \
  X(vkCreateComputePipelines)                    \
  X(vkDestroyPipeline)                           \
  X(vkCreateDescriptorPool)                      \
  X(vkDestroyDescriptorPool)                     \
  X(vkAllocateDescriptorSets)                    \
  X(vkUpdateDescriptorSets)                      \
  X(vkCreateCommandPool)                         \
  X(vkDestroyCommandPool)                        \
  X(vkAllocateCommandBuffers)                    \
  X(vkFreeCommandBuffers)                        \
  X(vkBeginCommandBuffer)                        \
  X(vkEndCommandBuffer)                          \
  X(vkResetCommandBuffer)                        \
  X(vkCreateFence)                               \
  X(vkDestroyFence)                              \
  X(vkResetFences)                               \
  X(vkWaitForFences)                             \
  X(vkGetFenceStatus)                            \
  X(vkCreateSemaphore)                           \
  X(vkDestroySemaphore)                          \
  X(vkCreateQueryPool)                           \
  X(vkDestroyQueryPool)                          \
  X(vkGetQueryPoolResults)                       \
  X(vkCmdBindPipeline)                           \
  X(vkCmdBindDescriptorSets)                     \
  X(vkCmdPushConstants)                          \
  X(vkCmdDispatch)                               \
  X(vkCmdDispatchBase)                           \
  X(vkCmdPipelineBarrier)                        \
  X(vkCmdCopyBuffer)                             \
  X(vkCmdFillBuffer)                             \
  X(vkCmdUpdateBuffer)                           \
  X(vkCmdResetQueryPool)                         \
  X(vkCmdWriteTimestamp)

#define ATTENDRE_VK_DECLARE(name) extern PFN_##name name;
extern PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
ATTENDRE_VK_GLOBAL_COMMANDS(ATTENDRE_VK_DECLARE)
ATTENDRE_VK_INSTANCE_COMMANDS(ATTENDRE_VK_DECLARE)
#undef ATTENDRE_VK_DECLARE

// Finds the loader's vkGetInstanceProcAddr (the application's `custom` one
// when given, else libvulkan opened with dlopen) and loads the global
// commands; idempotent. Fails (unsupported) when no Vulkan loader exists.
Status load_global_commands(PFN_vkGetInstanceProcAddr custom = nullptr);
// Loads the instance and device commands through `instance`, once per
// process (the first instance's loader trampolines serve every instance).
// Fails (unsupported) naming the Vulkan 1.1 commands the loader lacks.
Status load_instance_commands(VkInstance instance);

}  // namespace attendre::vk

// Macros that let one header declare a kernel's push constants and shared
// constants for both GLSL and C++, so that the two never drift apart.
// Push constants use 32-bit scalars only: std430 and C then agree on offsets.
#ifndef ATTENDRE_INTERFACE_PARAMS_H
#define ATTENDRE_INTERFACE_PARAMS_H

#ifdef __cplusplus
#include <cstdint>
#define ATT_NAMESPACE_BEGIN namespace attendre::kernels {
#define ATT_NAMESPACE_END }
#define ATT_PARAMS_BEGIN(Name) struct Name {
#define ATT_PARAMS_END(Name) \
  };                         \
  static_assert(sizeof(Name) <= 128, #Name " exceeds the 128-byte push-constant minimum");
#define ATT_U32(x) uint32_t x;
#define ATT_I32(x) int32_t x;
#define ATT_F32(x) float x;
#define ATT_CONST(name, value) inline constexpr uint32_t name = value;
// Specialization constants listed by an X-macro LIST(U, F) of U(id, name)
// (uint) and F(id, name) (float) entries, ids from 1 in order (0 is every
// kernel's workgroup size): a struct of their 32-bit words in C++.
#define ATT_SPEC_FIELD_U32(id, name) uint32_t name = 0;
#define ATT_SPEC_FIELD_F32(id, name) float name = 0.0f;
#define ATT_SPEC_STRUCT(Name, LIST) \
  struct Name {                     \
    LIST(ATT_SPEC_FIELD_U32, ATT_SPEC_FIELD_F32)  \
  };
#else
#define ATT_NAMESPACE_BEGIN
#define ATT_NAMESPACE_END
#define ATT_PARAMS_BEGIN(Name) layout(push_constant) uniform PushConstants {
#define ATT_PARAMS_END(Name) } pc;
#define ATT_U32(x) uint x;
#define ATT_I32(x) int x;
#define ATT_F32(x) float x;
#define ATT_CONST(name, value) const uint name = value;
// GLSL: one specialization constant sc_<name> per entry.
#define ATT_SPEC_FIELD_U32(id, name) layout(constant_id = id) const uint sc_##name = 0u;
#define ATT_SPEC_FIELD_F32(id, name) layout(constant_id = id) const float sc_##name = 0.0;
#define ATT_SPEC_STRUCT(Name, LIST) LIST(ATT_SPEC_FIELD_U32, ATT_SPEC_FIELD_F32)
#endif

#endif

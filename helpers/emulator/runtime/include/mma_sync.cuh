// The CPU emulator's mma_sync.cuh: the functions of the course's kernels/mma_sync.cuh (the warp's
// mma.sync m16n8k8 in TF32, and TF32 rounding), with the same names, signatures and semantics. The
// emulator's include path puts this file before the kernel's directory, so a kernel's
// `#include "mma_sync.cuh"` finds it.
//
// - mma_m16n8k8_tf32 is warp-collective: all 32 lanes call it together, or the emulator's
//   __syncwarp reports the divergence, naming the kernel's line. Each lane's a, b and d are its
//   elements in PTX's layout (kernels/mma_sync.cuh): lane 4g + t holds A (g, t), (g+8, t),
//   (g, t+4), (g+8, t+4); B (t, g), (t+4, g); D (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1).
// - Only the TF32 part of each input is used (the low 13 mantissa bits are dropped, as the tensor
//   cores ignore them); D's elements are accumulated in FP32, k in order. to_tf32 rounds to
//   nearest, ties away from zero (cvt.rna.tf32.f32); NaN and infinities stay.
// - The fragments live in registers: they meet in a per-warp slot, which traces leave out.
#pragma once

// Names other than the course header's are reserved (__x): a kernel's own macros above the
// #include stay out.
namespace __emu_mma_sync {
static inline float __tf32_bits(float __v) {  // what the tensor cores read of an input
  unsigned __u;
  __builtin_memcpy(&__u, &__v, 4);
  __u &= 0xffffe000u;
  __builtin_memcpy(&__v, &__u, 4);
  return __v;
}
// The warp's fragments meet here: each lane writes its elements, the warp synchronizes, each lane
// computes its own elements of D, and the warp synchronizes again before the next call may
// overwrite them (as <mma.h>'s mma_sync), in the warp's slot (__emu_warp_slot).
struct __exchange_slots {
  float __a[16][8], __b[8][8], __c[16][8];
};
}  // namespace __emu_mma_sync

__attribute__((noinline, __no_sanitize__("address"))) static void __emu_mma_m16n8k8_tf32(
    int __line, float (&__d)[4], const float (&__a)[4], const float (&__b)[2]) {
  __emu_mma_sync::__exchange_slots& __x = __emu_warp_slot<__emu_mma_sync::__exchange_slots>();
  const int __g = (int)__emu_lane() / 4, __t = (int)__emu_lane() % 4;
  __emu_syncwarp(0xffffffffu, __line);  // every lane has finished reading the previous exchange
  for (int __e = 0; __e < 4; ++__e)
    __x.__a[__g + 8 * (__e & 1)][__t + 4 * (__e >> 1)] = __emu_mma_sync::__tf32_bits(__a[__e]);
  for (int __e = 0; __e < 2; ++__e) __x.__b[__t + 4 * __e][__g] = __emu_mma_sync::__tf32_bits(__b[__e]);
  for (int __e = 0; __e < 4; ++__e) __x.__c[__g + 8 * (__e >> 1)][2 * __t + (__e & 1)] = __d[__e];
  __emu_syncwarp(0xffffffffu, __line);  // every lane's elements are in
  for (int __e = 0; __e < 4; ++__e) {
    const int __r = __g + 8 * (__e >> 1), __col = 2 * __t + (__e & 1);
    float __acc = __x.__c[__r][__col];
    for (int __k = 0; __k < 8; ++__k) __acc = __builtin_fmaf(__x.__a[__r][__k], __x.__b[__k][__col], __acc);
    __d[__e] = __acc;
  }
}
// A macro, so that a divergence names the caller's line.
#define mma_m16n8k8_tf32(...) __emu_mma_m16n8k8_tf32(__LINE__, __VA_ARGS__)

static inline float to_tf32(float __in) {
  unsigned __u;
  __builtin_memcpy(&__u, &__in, 4);
  if ((__u & 0x7f800000u) != 0x7f800000u) __u = (__u + 0x1000u) & 0xffffe000u;  // NaN and Inf stay
  float __out;
  __builtin_memcpy(&__out, &__u, 4);
  return __out;
}

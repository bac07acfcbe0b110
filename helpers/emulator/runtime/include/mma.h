// The CPU emulator's <mma.h>: nvcuda::wmma's TF32 fragments (m16n16k8, sm_80 and later), the
// subset stage 10 teaches. Other shapes and types do not compile here (static_assert names them).
//
// Semantics are the real header's and PTX's:
// - Every call is warp-collective: all 32 lanes call it with the same arguments, or the
//   emulator's __syncwarp reports the divergence. Pointers must be 32-byte (256-bit) aligned and
//   ldm a multiple of 4 floats (16 bytes); anything else is an error here (undefined on a GPU).
// - A fragment is spread over the warp; which lane holds which element is unspecified by CUDA.
//   The emulator uses PTX's documented layout of mma.m16n8k8 (tf32), twice along n: lane
//   g*4 + t (g = lane/4, t = lane%4) holds A (g, t), (g+8, t), (g, t+4), (g+8, t+4); B (t, g),
//   (t+4, g), (t, g+8), (t+4, g+8); C (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1) and the same
//   8 columns on. So loads and stores are traced lane by lane as 4-byte accesses at those
//   addresses (a GPU may widen or reorder them: the bank-conflict view of wmma is a model).
// - mma_sync uses only the TF32 part of each input (sign, 8 exponent bits, the top 10 mantissa
//   bits; the low 13 bits are dropped, as the tensor cores ignore them) and accumulates in FP32.
//   __float_to_tf32 rounds to nearest, ties away from zero (cvt.rna.tf32.f32).
#pragma once
// A kernel may #define what it likes before including this header, as with NVIDIA's: every
// name here is CUDA's own (nvcuda::wmma's) or reserved (__x), and nothing from std:: is used.

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
namespace precision {
struct tf32 {};
}

template <class __Use, int __M, int __N, int __K, class __T, class __Layout = void>
class fragment {
  static_assert(__M == 16 && __N == 16 && __K == 8,
                "the CPU emulator's wmma has only the TF32 shape m16n16k8 (stage 10)");
  static_assert(__emu_same<__Use, accumulator> ? __emu_same<__T, float> : __emu_same<__T, precision::tf32>,
                "the CPU emulator's wmma has TF32 matrix_a/matrix_b fragments and float accumulators");

 public:
  typedef float element_type;
  typedef float storage_element_type;
  enum { num_elements = __emu_same<__Use, accumulator> ? 8 : 4 };
  float x[num_elements];
};

__attribute__((__always_inline__)) static inline float __float_to_tf32(float __in) {
  unsigned __u;
  __builtin_memcpy(&__u, &__in, 4);
  if ((__u & 0x7f800000u) != 0x7f800000u) __u = (__u + 0x1000u) & 0xffffe000u;  // NaN and Inf stay
  float __out;
  __builtin_memcpy(&__out, &__u, 4);
  return __out;
}

namespace __emu_wmma {
static inline float __tf32_bits(float __v) {  // what the tensor cores read of an input
  unsigned __u;
  __builtin_memcpy(&__u, &__v, 4);
  __u &= 0xffffe000u;
  __builtin_memcpy(&__v, &__u, 4);
  return __v;
}
static inline unsigned __lane() { return __emu_lane(); }
// Row and column of element e of this lane's fragment of each kind (the layout above).
static inline void __a_pos(int __e, int& __r, int& __c) {
  __r = __lane() / 4 + 8 * (__e & 1);
  __c = __lane() % 4 + 4 * (__e >> 1);
}
static inline void __b_pos(int __e, int& __r, int& __c) {
  __r = __lane() % 4 + 4 * (__e & 1);
  __c = __lane() / 4 + 8 * (__e >> 1);
}
static inline void __c_pos(int __e, int& __r, int& __c) {
  __r = __lane() / 4 + 8 * ((__e >> 1) & 1);
  __c = 2 * (__lane() % 4) + (__e & 1) + 8 * (__e >> 2);
}
static inline void __check(const void* __p, unsigned __ldm, const char* __what, int __line) {
  if (reinterpret_cast<__UINTPTR_TYPE__>(__p) % 32 != 0 || __ldm % 4 != 0) __emu_wmma_misuse(__what, __line);
}
// The warp's fragments meet here for mma_sync: each lane writes its elements, the warp
// synchronizes, each lane computes its own elements of D, and the warp synchronizes again
// before the next mma_sync may overwrite them, in the warp's slot (__emu_warp_slot).
struct __exchange_slots {
  float __a[16][8], __b[8][16], __c[16][16];
};
}  // namespace __emu_wmma

template <class __Use, class __T, class __L>
__attribute__((__always_inline__)) static inline void fill_fragment(fragment<__Use, 16, 16, 8, __T, __L>& __f,
                                                                    float __v) {
  for (int __e = 0; __e < __f.num_elements; ++__e) __f.x[__e] = __v;
}

// load_matrix_sync, store_matrix_sync and mma_sync are macros that add the caller's line, for
// messages; the functions are always_inline, so the trace names the kernel's line of each access.
#define __EMU_WMMA_CHECK(__p, __ldm, __what) \
  __emu_wmma::__check(__p, __ldm, __what " needs a 32-byte aligned pointer and ldm a multiple of 4 floats", __line)

template <class __L>
__attribute__((__always_inline__)) static inline void __emu_load_matrix_sync(
    int __line, fragment<matrix_a, 16, 16, 8, precision::tf32, __L>& __f, const float* __p, unsigned __ldm) {
  __EMU_WMMA_CHECK(__p, __ldm, "wmma::load_matrix_sync (matrix_a)");
  __emu_syncwarp(0xffffffffu, __line);  // warp-collective
  for (int __e = 0; __e < 4; ++__e) {
    int __r, __c;
    __emu_wmma::__a_pos(__e, __r, __c);
    __f.x[__e] = __emu_same<__L, row_major> ? __p[__r * __ldm + __c] : __p[__c * __ldm + __r];
  }
}

template <class __L>
__attribute__((__always_inline__)) static inline void __emu_load_matrix_sync(
    int __line, fragment<matrix_b, 16, 16, 8, precision::tf32, __L>& __f, const float* __p, unsigned __ldm) {
  __EMU_WMMA_CHECK(__p, __ldm, "wmma::load_matrix_sync (matrix_b)");
  __emu_syncwarp(0xffffffffu, __line);
  for (int __e = 0; __e < 4; ++__e) {
    int __r, __c;
    __emu_wmma::__b_pos(__e, __r, __c);
    __f.x[__e] = __emu_same<__L, row_major> ? __p[__r * __ldm + __c] : __p[__c * __ldm + __r];
  }
}

__attribute__((__always_inline__)) static inline void __emu_load_matrix_sync(
    int __line, fragment<accumulator, 16, 16, 8, float>& __f, const float* __p, unsigned __ldm, layout_t __layout) {
  __EMU_WMMA_CHECK(__p, __ldm, "wmma::load_matrix_sync (accumulator)");
  __emu_syncwarp(0xffffffffu, __line);
  for (int __e = 0; __e < 8; ++__e) {
    int __r, __c;
    __emu_wmma::__c_pos(__e, __r, __c);
    __f.x[__e] = __layout == mem_row_major ? __p[__r * __ldm + __c] : __p[__c * __ldm + __r];
  }
}

__attribute__((__always_inline__)) static inline void __emu_store_matrix_sync(
    int __line, float* __p, const fragment<accumulator, 16, 16, 8, float>& __f, unsigned __ldm, layout_t __layout) {
  __EMU_WMMA_CHECK(__p, __ldm, "wmma::store_matrix_sync");
  __emu_syncwarp(0xffffffffu, __line);
  for (int __e = 0; __e < 8; ++__e) {
    int __r, __c;
    __emu_wmma::__c_pos(__e, __r, __c);
    (__layout == mem_row_major ? __p[__r * __ldm + __c] : __p[__c * __ldm + __r]) = __f.x[__e];
  }
}

template <class __LA, class __LB>
__attribute__((noinline, __no_sanitize__("address"))) static void __emu_mma_sync(
    int __line, fragment<accumulator, 16, 16, 8, float>& __d, const fragment<matrix_a, 16, 16, 8, precision::tf32, __LA>& __a,
    const fragment<matrix_b, 16, 16, 8, precision::tf32, __LB>& __b, const fragment<accumulator, 16, 16, 8, float>& __c) {
  using namespace __emu_wmma;
  __exchange_slots& __x = __emu_warp_slot<__exchange_slots>();
  int __r, __col;
  __emu_syncwarp(0xffffffffu, __line);  // every lane has finished reading the previous exchange
  for (int __e = 0; __e < 4; ++__e) __a_pos(__e, __r, __col), __x.__a[__r][__col] = __tf32_bits(__a.x[__e]);
  for (int __e = 0; __e < 4; ++__e) __b_pos(__e, __r, __col), __x.__b[__r][__col] = __tf32_bits(__b.x[__e]);
  for (int __e = 0; __e < 8; ++__e) __c_pos(__e, __r, __col), __x.__c[__r][__col] = __c.x[__e];
  __emu_syncwarp(0xffffffffu, __line);  // every lane's elements are in
  for (int __e = 0; __e < 8; ++__e) {
    __c_pos(__e, __r, __col);
    float __acc = __x.__c[__r][__col];
    for (int __k = 0; __k < 8; ++__k) __acc = __builtin_fmaf(__x.__a[__r][__k], __x.__b[__k][__col], __acc);
    __d.x[__e] = __acc;
  }
}
#undef __EMU_WMMA_CHECK
#define load_matrix_sync(...) __emu_load_matrix_sync(__LINE__, __VA_ARGS__)
#define store_matrix_sync(...) __emu_store_matrix_sync(__LINE__, __VA_ARGS__)
#define mma_sync(...) __emu_mma_sync(__LINE__, __VA_ARGS__)

}  // namespace wmma
}  // namespace nvcuda

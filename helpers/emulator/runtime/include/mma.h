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

template <class Use, int M, int N, int K, class T, class Layout = void>
class fragment {
  static_assert(M == 16 && N == 16 && K == 8,
                "the CPU emulator's wmma has only the TF32 shape m16n16k8 (stage 10)");
  static_assert(std::is_same<Use, accumulator>::value ? std::is_same<T, float>::value
                                                      : std::is_same<T, precision::tf32>::value,
                "the CPU emulator's wmma has TF32 matrix_a/matrix_b fragments and float accumulators");

 public:
  typedef float element_type;
  typedef float storage_element_type;
  enum { num_elements = std::is_same<Use, accumulator>::value ? 8 : 4 };
  float x[num_elements];
};

__attribute__((always_inline)) static inline float __float_to_tf32(float in) {
  unsigned u;
  std::memcpy(&u, &in, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;  // NaN and Inf stay
  float out;
  std::memcpy(&out, &u, 4);
  return out;
}

namespace detail {
static inline float tf32_bits(float v) {  // what the tensor cores read of an input
  unsigned u;
  std::memcpy(&u, &v, 4);
  u &= 0xffffe000u;
  std::memcpy(&v, &u, 4);
  return v;
}
static inline unsigned lane() { return __emu_cur->lane; }
// Row and column of element e of this lane's fragment of each kind (the layout above).
static inline void a_pos(int e, int& r, int& c) { r = lane() / 4 + 8 * (e & 1); c = lane() % 4 + 4 * (e >> 1); }
static inline void b_pos(int e, int& r, int& c) { r = lane() % 4 + 4 * (e & 1); c = lane() / 4 + 8 * (e >> 1); }
static inline void c_pos(int e, int& r, int& c) {
  r = lane() / 4 + 8 * ((e >> 1) & 1);
  c = 2 * (lane() % 4) + (e & 1) + 8 * (e >> 2);
}
static inline void check(const void* p, unsigned ldm, const char* what, int line) {
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0 || ldm % 4 != 0) __emu_wmma_misuse(what, line);
}
// The warp's fragments meet here for mma_sync: each lane writes its elements, the warp
// synchronizes, each lane computes its own elements of D, and the warp synchronizes again
// before the next mma_sync may overwrite them. One slot per warp of the block.
struct Exchange {
  float a[16][8], b[8][16], c[16][16];
};
__attribute__((no_sanitize("address"))) static inline Exchange& exchange() {
  static Exchange slots[32];
  return slots[__emu_cur->warp];
}
}  // namespace detail

template <class Use, class T, class L>
__attribute__((always_inline)) static inline void fill_fragment(fragment<Use, 16, 16, 8, T, L>& f, float v) {
  for (int e = 0; e < f.num_elements; ++e) f.x[e] = v;
}

// load_matrix_sync, store_matrix_sync and mma_sync are macros that add the caller's line, for
// messages; the functions are always_inline, so the trace names the kernel's line of each access.
#define EMU_WMMA_CHECK(p, ldm, what) \
  detail::check(p, ldm, what " needs a 32-byte aligned pointer and ldm a multiple of 4 floats", line)

template <class L>
__attribute__((always_inline)) static inline void __emu_load_matrix_sync(
    int line, fragment<matrix_a, 16, 16, 8, precision::tf32, L>& f, const float* p, unsigned ldm) {
  EMU_WMMA_CHECK(p, ldm, "wmma::load_matrix_sync (matrix_a)");
  __emu_syncwarp(0xffffffffu, line);  // warp-collective
  for (int e = 0; e < 4; ++e) {
    int r, c;
    detail::a_pos(e, r, c);
    f.x[e] = std::is_same<L, row_major>::value ? p[r * ldm + c] : p[c * ldm + r];
  }
}

template <class L>
__attribute__((always_inline)) static inline void __emu_load_matrix_sync(
    int line, fragment<matrix_b, 16, 16, 8, precision::tf32, L>& f, const float* p, unsigned ldm) {
  EMU_WMMA_CHECK(p, ldm, "wmma::load_matrix_sync (matrix_b)");
  __emu_syncwarp(0xffffffffu, line);
  for (int e = 0; e < 4; ++e) {
    int r, c;
    detail::b_pos(e, r, c);
    f.x[e] = std::is_same<L, row_major>::value ? p[r * ldm + c] : p[c * ldm + r];
  }
}

__attribute__((always_inline)) static inline void __emu_load_matrix_sync(
    int line, fragment<accumulator, 16, 16, 8, float>& f, const float* p, unsigned ldm, layout_t layout) {
  EMU_WMMA_CHECK(p, ldm, "wmma::load_matrix_sync (accumulator)");
  __emu_syncwarp(0xffffffffu, line);
  for (int e = 0; e < 8; ++e) {
    int r, c;
    detail::c_pos(e, r, c);
    f.x[e] = layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r];
  }
}

__attribute__((always_inline)) static inline void __emu_store_matrix_sync(
    int line, float* p, const fragment<accumulator, 16, 16, 8, float>& f, unsigned ldm, layout_t layout) {
  EMU_WMMA_CHECK(p, ldm, "wmma::store_matrix_sync");
  __emu_syncwarp(0xffffffffu, line);
  for (int e = 0; e < 8; ++e) {
    int r, c;
    detail::c_pos(e, r, c);
    (layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = f.x[e];
  }
}

template <class LA, class LB>
__attribute__((noinline, no_sanitize("address"))) static void __emu_mma_sync(
    int line, fragment<accumulator, 16, 16, 8, float>& d, const fragment<matrix_a, 16, 16, 8, precision::tf32, LA>& a,
    const fragment<matrix_b, 16, 16, 8, precision::tf32, LB>& b, const fragment<accumulator, 16, 16, 8, float>& c) {
  detail::Exchange& x = detail::exchange();
  int r, col;
  __emu_syncwarp(0xffffffffu, line);  // every lane has finished reading the previous exchange
  for (int e = 0; e < 4; ++e) detail::a_pos(e, r, col), x.a[r][col] = detail::tf32_bits(a.x[e]);
  for (int e = 0; e < 4; ++e) detail::b_pos(e, r, col), x.b[r][col] = detail::tf32_bits(b.x[e]);
  for (int e = 0; e < 8; ++e) detail::c_pos(e, r, col), x.c[r][col] = c.x[e];
  __emu_syncwarp(0xffffffffu, line);  // every lane's elements are in
  for (int e = 0; e < 8; ++e) {
    detail::c_pos(e, r, col);
    float acc = x.c[r][col];
    for (int k = 0; k < 8; ++k) acc = std::fma(x.a[r][k], x.b[k][col], acc);
    d.x[e] = acc;
  }
}
#undef EMU_WMMA_CHECK
#define load_matrix_sync(...) __emu_load_matrix_sync(__LINE__, __VA_ARGS__)
#define store_matrix_sync(...) __emu_store_matrix_sync(__LINE__, __VA_ARGS__)
#define mma_sync(...) __emu_mma_sync(__LINE__, __VA_ARGS__)

}  // namespace wmma
}  // namespace nvcuda

// Tile by Tile CPU emulator: CUDA's built-in vector types, dim3, and the running thread's
// identity. What a kernel's unit (through cuda_emu.h) and the runtime (runtime_internal.h) both
// see; it needs no standard header.
#pragma once

// ---- built-in vector types ---------------------------------------------------------------
#define EMU_VEC1(T, N, A) struct alignas(A) N##1 { T x; };
#define EMU_VEC2(T, N, A) struct alignas(A) N##2 { T x, y; };
#define EMU_VEC3(T, N) struct N##3 { T x, y, z; };
#define EMU_VEC4(T, N, A) struct alignas(A) N##4 { T x, y, z, w; };
#define EMU_MAKE(T, N)                                                                    \
  static inline N##1 make_##N##1(T x) { return N##1{x}; }                                \
  static inline N##2 make_##N##2(T x, T y) { return N##2{x, y}; }                        \
  static inline N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }                \
  static inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
#define EMU_VECS(T, N, A1, A2, A4) \
  EMU_VEC1(T, N, A1) EMU_VEC2(T, N, A2) EMU_VEC3(T, N) EMU_VEC4(T, N, A4) EMU_MAKE(T, N)
EMU_VECS(float, float, 4, 8, 16)
EMU_VECS(double, double, 8, 16, 16)
EMU_VECS(int, int, 4, 8, 16)
EMU_VECS(unsigned int, uint, 4, 8, 16)
EMU_VECS(signed char, char, 1, 2, 4)
EMU_VECS(unsigned char, uchar, 1, 2, 4)
EMU_VECS(short, short, 2, 4, 8)
EMU_VECS(unsigned short, ushort, 2, 4, 8)
EMU_VECS(long long, longlong, 8, 16, 16)
EMU_VECS(unsigned long long, ulonglong, 8, 16, 16)
#undef EMU_VEC1
#undef EMU_VEC2
#undef EMU_VEC3
#undef EMU_VEC4
#undef EMU_MAKE
#undef EMU_VECS

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

// ---- thread identity -------------------------------------------------------------------
struct __emu_thread {
  uint3 tid;
  unsigned int lane, warp, linear;
  unsigned int rank;  // its block's rank in the cluster (%cluster_ctarank; 0 without __cluster_dims__)
};
extern "C" {
extern __emu_thread* __emu_cur;  // the running fiber
extern uint3 __emu_block_idx;
extern dim3 __emu_block_dim, __emu_grid_dim;
}

// The warp-level tensor-core instruction mma.sync (PTX ISA 7.0, sm_80 and later) in its TF32
// shape m16n8k8, and TF32 rounding, as C++ functions for stage 10's 10_mma_sync kernel. wmma
// (<mma.h>) multiplies on the same tensor cores but leaves unspecified which lane holds which
// element; mma.sync's layout is PTX's documented one, so a kernel can load and store fragments
// itself. CUDA C++ has no API for it, so these are written in inline PTX. The CPU emulator has its
// own header of the same name, which runs the same functions on the CPU
// (helpers/emulator/runtime/include).
//
// The fragments of one mma.sync are spread over the 32 lanes of a warp. Lane l = 4g + t
// (g = l / 4 in 0..7, t = l % 4 in 0..3) holds
//   A (16 x 8, row-major): a[0] = A(g, t), a[1] = A(g+8, t), a[2] = A(g, t+4), a[3] = A(g+8, t+4)
//   B (8 x 8, ".col": group g holds column g): b[0] = B(t, g), b[1] = B(t+4, g)
//   C and D (16 x 8, FP32): d[0] = D(g, 2t), d[1] = D(g, 2t+1), d[2] = D(g+8, 2t), d[3] = D(g+8, 2t+1)
#pragma once

// D (16 x 8, FP32) += A (16 x 8, TF32) * B (8 x 8, TF32), on the tensor cores. Warp-collective
// ("sync.aligned"): all 32 lanes of the warp call it together, at the same point of the code,
// each with its own elements. The tensor cores read the TF32 bits of a and b (sign, exponent, the
// top 10 mantissa bits) and ignore the low 13; products and sums are FP32.
__device__ __forceinline__ void mma_m16n8k8_tf32(float (&d)[4], const float (&a)[4], const float (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])), "r"(__float_as_uint(a[3])),
        "r"(__float_as_uint(b[0])), "r"(__float_as_uint(b[1])));
}

// x rounded to the nearest TF32, ties away from zero (cvt.rna.tf32.f32), as a float whose low 13
// mantissa bits are 0: what wmma::__float_to_tf32 returns. One thread, no collective.
__device__ __forceinline__ float to_tf32(float x) {
  unsigned bits;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(bits) : "f"(x));
  return __uint_as_float(bits);
}

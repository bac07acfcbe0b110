// Hopper's warpgroup MMA (wgmma, PTX ISA 8.0, sm_90a), the few instructions stage 10's
// 10_wgmma kernel uses, as C++ functions. CUDA C++ has no API for them (wmma is the older,
// warp-level one), so they are written in inline PTX. The CPU emulator has its own header of
// the same name, which runs the same functions on the CPU (helpers/emulator/runtime/include).
//
// A warpgroup is 4 consecutive warps (threads 128g .. 128g+127). All its 128 threads call each
// function together ("sync.aligned"). wgmma_m64k8_tf32<N> multiplies a 64 x 8 tile of A, held in
// the warpgroup's registers, by an 8 x N tile of B in shared memory, and adds the 64 x N product
// to accumulators in registers. It is asynchronous: it returns before the tensor cores are done,
// and until wgmma_wait_group says its group has completed, its A registers, its accumulators and
// the shared memory it reads must not be touched.
#pragma once

// Orders the warpgroup's earlier register writes (accumulators, A fragments) before the next
// wgmma_m64k8_tf32: required before the first one and after any other write of those registers.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }

// Closes the group of every wgmma_m64k8_tf32 issued since the last commit.
__device__ __forceinline__ void wgmma_commit_group() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

// Waits until at most PENDING of the warpgroup's committed groups are still running.
template <int PENDING>
__device__ __forceinline__ void wgmma_wait_group() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}

// Makes this thread's writes to shared memory (stores, asynchronous copies that have landed)
// visible to the tensor cores' reads, which go through the "async proxy", another path to
// shared memory. Each writing thread calls it before the barrier that publishes its writes.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// The descriptor wgmma reads its shared-memory operand through, for a tile of rows of 32 floats
// (128 bytes, one row per column n of B; K runs along the row) in the 128-byte swizzle: the 16
// bytes at floats 4c .. 4c+3 of row r are stored at floats 4(c ^ (r % 8)) .. of that row, so that
// the 8 rows of each group of 8 spread any 16-byte column over all 32 banks. `tile` points at
// the row-r, float-k0 corner the instruction reads (k0 = 0, 8, 16 or 24); the tile's first row
// must be 1024-byte aligned in shared memory. Bits (PTX "matrix descriptor"): address / 16 in
// 0-13, leading-dimension offset 16 B / 16 in 16-29 (unused with this swizzle), stride between
// groups of 8 rows 1024 B / 16 in 32-45, swizzle mode 1 (128 bytes) in 62-63.
__device__ __forceinline__ unsigned long long wgmma_desc_sw128(const float* tile) {
  const unsigned long long address = static_cast<unsigned>(__cvta_generic_to_shared(tile));
  return ((address & 0x3ffff) >> 4) | (1ull << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
}

// D (64 x N, FP32) += A (64 x 8, TF32) * B (8 x N, TF32), asynchronously on the tensor cores.
// d: this thread's N/2 accumulators; warp w of the warpgroup holds rows 16w .. 16w+15 of D, and
// lane l = 4g + t (g = l/4, t = l%4) holds, for j = 0 .. N/8-1, d[4j] = D(16w+g, 8j+2t),
// d[4j+1] = D(16w+g, 8j+2t+1), d[4j+2] = D(16w+g+8, 8j+2t), d[4j+3] = D(16w+g+8, 8j+2t+1).
// a: this thread's 4 elements of A, a[0] = A(16w+g, t), a[1] = A(16w+g+8, t),
// a[2] = A(16w+g, t+4), a[3] = A(16w+g+8, t+4); the tensor cores read their TF32 bits.
// b: wgmma_desc_sw128 of B's tile, stored as N rows of K (B transposed: "K-major").
// PTX has N = 8, 16, ... 256; each needs its own list of N/2 accumulator operands, and this header
// spells out three (the CPU emulator's header takes any multiple of 8).
template <int N>
__device__ __forceinline__ void wgmma_m64k8_tf32(float (&d)[N / 2], const float (&a)[4], unsigned long long b) {
  static_assert(N == 64 || N == 128 || N == 256,
                "wgmma_m64k8_tf32<N>: kernels/wgmma.cuh spells out N = 64, 128 and 256; add N's operand list for another");
}

template <>
__device__ __forceinline__ void wgmma_m64k8_tf32<64>(float (&d)[32], const float (&a)[4], unsigned long long b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7,"
      "%8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23,"
      "%24, %25, %26, %27, %28, %29, %30, %31},"
      " {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])), "r"(__float_as_uint(a[3])), "l"(b));
}

template <>
__device__ __forceinline__ void wgmma_m64k8_tf32<128>(float (&d)[64], const float (&a)[4], unsigned long long b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7,"
      "%8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23,"
      "%24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39,"
      "%40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55,"
      "%56, %57, %58, %59, %60, %61, %62, %63},"
      " {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])), "r"(__float_as_uint(a[3])), "l"(b));
}

template <>
__device__ __forceinline__ void wgmma_m64k8_tf32<256>(float (&d)[128], const float (&a)[4], unsigned long long b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7,"
      "%8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23,"
      "%24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39,"
      "%40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55,"
      "%56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71,"
      "%72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87,"
      "%88, %89, %90, %91, %92, %93, %94, %95,"
      "%96, %97, %98, %99, %100, %101, %102, %103,"
      "%104, %105, %106, %107, %108, %109, %110, %111,"
      "%112, %113, %114, %115, %116, %117, %118, %119,"
      "%120, %121, %122, %123, %124, %125, %126, %127},"
      " {%128, %129, %130, %131}, %132, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])), "r"(__float_as_uint(a[3])), "l"(b));
}

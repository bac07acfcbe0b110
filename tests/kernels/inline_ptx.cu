// Test kernel with inline PTX, which the CPU emulator cannot run.

__global__ void lane_id(int* out) {
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));  // LINE: inline_ptx
  out[threadIdx.x] = (int)lane;
}

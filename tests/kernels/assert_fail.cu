// Safety test kernel: a failed assert in thread 2 of block 1.
__global__ void assert_fail(int* out, int limit) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = i;
  assert(i != limit);  // LINE: assert_fail
}

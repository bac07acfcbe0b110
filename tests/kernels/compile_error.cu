// Test kernel that does not compile: the error is on the line marked below.

__global__ void broken(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = undeclared_variable * 2.0f;  // LINE: compile_error
  }
}

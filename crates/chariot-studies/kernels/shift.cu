// The paper's dummy kernel (GPU-chariot §6.1): load integers, apply shift operations
// `iters` times, store. The iteration count sets the kernel's share of the time, and
// so the transfer ratio r = (T_D + T_R) / T_K.
extern "C" __global__ void shift(unsigned int* __restrict__ out,
                                 const unsigned int* __restrict__ in,
                                 unsigned int n, unsigned int iters) {
    const unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned int x = in[i];
        for (unsigned int k = 0; k < iters; ++k) {
            x = (x << 1) ^ (x >> 3) ^ k;
        }
        out[i] = x;
    }
}

// A kernel that does nothing: for measuring the runtime's own cost per command.
extern "C" __global__ void empty() {}

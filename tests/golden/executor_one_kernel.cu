// chariot: device-side window executor (generated)
__shared__ uint3 chariot_block_idx;
__shared__ uint3 chariot_grid_dim;
#define blockIdx chariot_block_idx
#define gridDim chariot_grid_dim
extern "C" __device__ void twice(float* x, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
#undef blockIdx
#undef gridDim
template <int... I> struct chariot_seq {};
template <int N, int... I> struct chariot_make : chariot_make<N - 1, N - 1, I...> {};
template <int... I> struct chariot_make<0, I...> { typedef chariot_seq<I...> type; };
template <class T> __device__ __forceinline__ T chariot_word(unsigned long long w) {
    T v;
    memcpy(&v, &w, sizeof(T));  // the low bytes: little-endian, as the host wrote them
    return v;
}
template <class... A, int... I>
__device__ __forceinline__ void chariot_call_seq(void (*f)(A...), const unsigned long long* w, chariot_seq<I...>) {
    f(chariot_word<A>(w[I])...);
}
template <class... A> __device__ __forceinline__ void chariot_call(void (*f)(A...), const unsigned long long* w) {
    chariot_call_seq(f, w, typename chariot_make<sizeof...(A)>::type());
}
__device__ __forceinline__ void chariot_run(int kernel, const unsigned long long* w) {
    switch (kernel) {
    case 0: chariot_call(&twice, w); break;
    default: break;
    }
}
// The image: control[4] (ticket, tail, done, unused), remaining[n], queue[n] (roots
// first, then -1), offsets[n + 1], successors[m], tasks[n * 5] (kernel, grid x, y, z,
// first argument), then at `args` (8-byte aligned) the argument words.
extern "C" __global__ void chariot_device_window(int* image, int n, int m, unsigned long long* args) {
    __shared__ int task;
    int* control = image;
    int* remaining = control + 4;
    int* queue = remaining + n;
    const int* offsets = queue + n;
    const int* succ = offsets + n + 1;
    const int* tasks = succ + m;
    volatile int* vqueue = queue;
    const bool lead = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
    for (;;) {
        if (lead) {
            int got = -1;
            const int ticket = atomicAdd(&control[0], 1);
            if (ticket < n) {
                unsigned backoff = 32;
                for (;;) {
                    const int v = vqueue[ticket];
                    if (v >= 0) { got = v; break; }
                    __nanosleep(backoff);
                    if (backoff < 1024) backoff *= 2;
                }
                __threadfence();  // acquire: what the task's predecessors wrote
            }
            task = got;
        }
        __syncthreads();
        const int t = task;
        if (t < 0) return;
        const int* row = tasks + 5 * t;
        const unsigned gx = row[1], gy = row[2], gz = row[3];
        const unsigned blocks = gx * gy * gz;
        for (unsigned b = 0; b < blocks; ++b) {
            if (lead) {
                chariot_block_idx = make_uint3(b % gx, (b / gx) % gy, b / (gx * gy));
                chariot_grid_dim = make_uint3(gx, gy, gz);
            }
            __syncthreads();
            chariot_run(row[0], args + row[4]);
            __syncthreads();
        }
        __threadfence();  // release: every thread's writes before the successors go
        __syncthreads();
        if (lead) {
            for (int e = offsets[t]; e < offsets[t + 1]; ++e) {
                const int s = succ[e];
                if (atomicAdd(&remaining[s], -1) == 1) {
                    const int slot = atomicAdd(&control[1], 1);
                    atomicExch(&queue[slot], s);
                }
            }
            atomicAdd(&control[2], 1);
        }
    }
}

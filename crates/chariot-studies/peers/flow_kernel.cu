// The flow module's spin kernel (SPIN_SOURCE in chariot-studies' src/flow/mod.rs),
// its body character for character: every node of every peer's graph is one launch
// of it on one block of flow::BLOCK threads.
extern "C" __global__ void flow_spin(float* sink, unsigned iters) {
    float a = threadIdx.x * 1e-3f, b = 1.0001f;
    for (unsigned i = 0; i < iters; ++i) {
        a = fmaf(a, b, 1e-4f);
        b = fmaf(b, 0.9999f, 1e-5f);
    }
    if (threadIdx.x == 0) sink[0] = a + b;
}

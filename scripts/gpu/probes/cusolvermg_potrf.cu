// cuSOLVER's multi-GPU Cholesky (cusolverMgPotrf, lower, FP64) on the matrix chariot's
// tiled Cholesky study factorises (crates/chariot-studies/src/cholesky: entry (i, j) a
// uniform value in [-1, 1) hashed from the seed and (max, min), plus N on the
// diagonal), as a CUDA programmer calls it: the matrix in pinned host memory, uploaded
// to every visible GPU in cuSOLVER's 1-D block-cyclic column layout (column tiles of
// T, tile j on GPU j mod G), factorised, the factor downloaded. Each round is timed
// whole and in its three parts; the factor is checked against A on random vectors
// (|A x - L L^T x| / (|A|_F |x|)). The peer of chariot's tiled Cholesky at D >= 2.
//
//   nvcc -O3 -arch=sm_90 -Xcompiler -fopenmp cusolvermg_potrf.cu -lcusolverMg -o mg
//   ./mg N T ROUNDS [SEED]        (every visible GPU: CUDA_VISIBLE_DEVICES picks them)
//
// Prints one line a round: "mg-potrf n=N tile=T gpus=G round=R upload_ms=..
// factor_ms=.. download_ms=.. total_ms=.. tflops_total=.. tflops_factor=.. residual=..".
#include <cuda_runtime.h>
#include <cusolverMg.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_CUDA(call)                                                                   \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,              \
                         cudaGetErrorString(e_));                                          \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)
#define CHECK_MG(call)                                                                     \
    do {                                                                                   \
        cusolverStatus_t s_ = (call);                                                      \
        if (s_ != CUSOLVER_STATUS_SUCCESS) {                                               \
            std::fprintf(stderr, "%s:%d %s: status %d\n", __FILE__, __LINE__, #call,       \
                         static_cast<int>(s_));                                            \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)

// The study's generator (cholesky/mod.rs: splitmix, uniform, Spd::entry), bit for bit.
static inline uint64_t splitmix(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline double uniform(uint64_t seed, uint64_t k) {
    uint64_t h = splitmix(seed ^ splitmix(k));
    return static_cast<double>(h >> 11) * (2.0 / static_cast<double>(1ull << 53)) - 1.0;
}
static inline double entry(int64_t n, uint64_t seed, int64_t i, int64_t j) {
    int64_t hi = i >= j ? i : j, lo = i >= j ? j : i;
    double v = uniform(seed, (static_cast<uint64_t>(hi) << 32) | static_cast<uint64_t>(lo));
    return i == j ? v + static_cast<double>(n) : v;
}

static double ms_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

int main(int argc, char **argv) {
    if (argc < 4 || argc > 5) {
        std::fprintf(stderr, "usage: %s N TILE ROUNDS [SEED]  (every visible GPU)\n", argv[0]);
        return 2;
    }
    const int64_t n = std::atoll(argv[1]);
    const int64_t t = std::atoll(argv[2]);
    const int rounds = std::atoi(argv[3]);
    const uint64_t seed = argc == 5 ? std::strtoull(argv[4], nullptr, 10) : 1;
    if (n < 1 || t < 1 || rounds < 1 || n > 65536) {
        std::fprintf(stderr, "N in 1..=65536, TILE >= 1 and ROUNDS >= 1, got %lld %lld %d\n",
                     static_cast<long long>(n), static_cast<long long>(t), rounds);
        return 2;
    }
    int g = 0;
    CHECK_CUDA(cudaGetDeviceCount(&g));
    std::vector<int> devices(g);
    for (int d = 0; d < g; ++d) devices[d] = d;
    // Peer access both ways, as cusolverMg expects.
    for (int a = 0; a < g; ++a) {
        CHECK_CUDA(cudaSetDevice(a));
        for (int b = 0; b < g; ++b) {
            int can = 0;
            if (a != b && cudaDeviceCanAccessPeer(&can, a, b) == cudaSuccess && can) {
                cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
                if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CHECK_CUDA(e);
                (void)cudaGetLastError();
            }
        }
    }

    cusolverMgHandle_t h = nullptr;
    CHECK_MG(cusolverMgCreate(&h));
    CHECK_MG(cusolverMgDeviceSelect(h, g, devices.data()));
    cudaLibMgGrid_t grid;
    CHECK_MG(cusolverMgCreateDeviceGrid(&grid, 1, g, devices.data(), CUDALIBMG_GRID_MAPPING_COL_MAJOR));
    cudaLibMgMatrixDesc_t desc;
    CHECK_MG(cusolverMgCreateMatrixDesc(&desc, n, n, n, t, CUDA_R_64F, grid));

    // A (column-major, lda = n) and the factor's copy, both pinned.
    const size_t elems = static_cast<size_t>(n) * static_cast<size_t>(n);
    double *a = nullptr, *l = nullptr;
    CHECK_CUDA(cudaMallocHost(&a, elems * sizeof(double)));
    CHECK_CUDA(cudaMallocHost(&l, elems * sizeof(double)));
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < n; ++i) a[j * n + i] = entry(n, seed, i, j);

    // Per GPU: its column tiles (tile k on GPU k mod g, local slot k / g), its stream and
    // its workspace.
    const int64_t tiles = (n + t - 1) / t;
    const int64_t per_gpu = (tiles + g - 1) / g;
    std::vector<double *> local(g, nullptr), work(g, nullptr);
    std::vector<cudaStream_t> streams(g);
    for (int d = 0; d < g; ++d) {
        CHECK_CUDA(cudaSetDevice(d));
        CHECK_CUDA(cudaMalloc(&local[d], static_cast<size_t>(n) * t * per_gpu * sizeof(double)));
        CHECK_CUDA(cudaStreamCreateWithFlags(&streams[d], cudaStreamNonBlocking));
    }
    int64_t lwork = 0;
    CHECK_MG(cusolverMgPotrf_bufferSize(h, CUBLAS_FILL_MODE_LOWER, n, reinterpret_cast<void **>(local.data()), 1, 1,
                                        desc, CUDA_R_64F, &lwork));
    for (int d = 0; d < g; ++d) {
        CHECK_CUDA(cudaSetDevice(d));
        CHECK_CUDA(cudaMalloc(&work[d], static_cast<size_t>(lwork) * sizeof(double)));
    }
    // Copies tile by tile, every GPU's on its own stream, all in flight at once.
    auto copy_tiles = [&](bool up) {
        for (int64_t k = 0; k < tiles; ++k) {
            const int d = static_cast<int>(k % g);
            const int64_t cols = (k + 1) * t <= n ? t : n - k * t;
            double *host = (up ? a : l) + k * t * n;
            double *dev = local[d] + (k / g) * t * n;
            const size_t bytes = static_cast<size_t>(cols) * n * sizeof(double);
            CHECK_CUDA(cudaSetDevice(d));
            CHECK_CUDA(cudaMemcpyAsync(up ? static_cast<void *>(dev) : static_cast<void *>(host),
                                       up ? static_cast<const void *>(host) : static_cast<const void *>(dev), bytes,
                                       up ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, streams[d]));
        }
        for (int d = 0; d < g; ++d) {
            CHECK_CUDA(cudaSetDevice(d));
            CHECK_CUDA(cudaStreamSynchronize(streams[d]));
        }
    };

    const double flops = static_cast<double>(n) * n * n / 3.0;
    for (int r = 1; r <= rounds; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        copy_tiles(true);
        const double up_ms = ms_since(t0);
        auto t1 = std::chrono::steady_clock::now();
        int info = 0;
        CHECK_MG(cusolverMgPotrf(h, CUBLAS_FILL_MODE_LOWER, n, reinterpret_cast<void **>(local.data()), 1, 1, desc,
                                 CUDA_R_64F, reinterpret_cast<void **>(work.data()), lwork, &info));
        for (int d = 0; d < g; ++d) {
            CHECK_CUDA(cudaSetDevice(d));
            CHECK_CUDA(cudaDeviceSynchronize());
        }
        const double factor_ms = ms_since(t1);
        if (info != 0) {
            std::fprintf(stderr, "cusolverMgPotrf: info = %d\n", info);
            return 1;
        }
        auto t2 = std::chrono::steady_clock::now();
        copy_tiles(false);
        const double down_ms = ms_since(t2);
        const double total_ms = ms_since(t0);

        // Residual on two random vectors: |A x - L (L^T x)| / (|A|_F |x|).
        double worst = 0.0;
        for (int v = 0; v < 2; ++v) {
            std::vector<double> x(n), y(n, 0.0), z(n, 0.0), w(n, 0.0);
            for (int64_t i = 0; i < n; ++i) x[i] = uniform(seed + 1000 + v, static_cast<uint64_t>(i));
            double anorm2 = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : anorm2)
            for (int64_t i = 0; i < n; ++i) {
                double s = 0.0;
                for (int64_t j = 0; j < n; ++j) {
                    const double e = a[j * n + i];
                    s += e * x[j];
                    anorm2 += e * e;
                }
                y[i] = s;
            }
            // w = L^T x: w[j] = sum over i >= j of L(i, j) x[i].
#pragma omp parallel for schedule(dynamic, 64)
            for (int64_t j = 0; j < n; ++j) {
                double s = 0.0;
                for (int64_t i = j; i < n; ++i) s += l[j * n + i] * x[i];
                w[j] = s;
            }
            // z = L w: z[i] = sum over j <= i of L(i, j) w[j].
#pragma omp parallel for schedule(dynamic, 64)
            for (int64_t i = 0; i < n; ++i) {
                double s = 0.0;
                for (int64_t j = 0; j <= i; ++j) s += l[j * n + i] * w[j];
                z[i] = s;
            }
            double dn = 0.0, xn = 0.0;
            for (int64_t i = 0; i < n; ++i) {
                dn += (y[i] - z[i]) * (y[i] - z[i]);
                xn += x[i] * x[i];
            }
            const double res = std::sqrt(dn) / (std::sqrt(anorm2) * std::sqrt(xn));
            worst = res > worst ? res : worst;
        }
        std::printf("mg-potrf n=%lld tile=%lld gpus=%d round=%d upload_ms=%.3f factor_ms=%.3f download_ms=%.3f "
                    "total_ms=%.3f tflops_total=%.3f tflops_factor=%.3f residual=%.3e\n",
                    static_cast<long long>(n), static_cast<long long>(t), g, r, up_ms, factor_ms, down_ms, total_ms,
                    flops / (total_ms * 1e9), flops / (factor_ms * 1e9), worst);
        std::fflush(stdout);
    }
    for (int d = 0; d < g; ++d) {
        CHECK_CUDA(cudaSetDevice(d));
        CHECK_CUDA(cudaFree(work[d]));
        CHECK_CUDA(cudaFree(local[d]));
        CHECK_CUDA(cudaStreamDestroy(streams[d]));
    }
    CHECK_CUDA(cudaFreeHost(a));
    CHECK_CUDA(cudaFreeHost(l));
    CHECK_MG(cusolverMgDestroyMatrixDesc(desc));
    CHECK_MG(cusolverMgDestroyGrid(grid));
    CHECK_MG(cusolverMgDestroy(h));
    return 0;
}

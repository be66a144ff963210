// The tiled Cholesky's chain from one step to the next (POTRF of the diagonal tile, its
// inverse by the leaf kernel and batched GEMMs, the next row's tile multiplied by it, the
// next diagonal tile's SYRK), timed alone and under a load of GEMMs, with the SMs either
// shared (the chain on a high-priority stream, as the study runs it) or split by green
// contexts: the chain's own K SMs, the load on the rest. Also the load's own time on all
// SMs and on the rest, which is what a split costs the trailing update.
//
// Build and run there: nvcc -O3 -std=c++17 -arch=sm_90 green_chain.cu -lcublas -lcusolver -lcuda -o gc
//                      ./gc 1024 2048
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>
#include <unistd.h>

#define CK(x)                                                                       \
    do {                                                                            \
        auto e_ = (x);                                                              \
        if ((int)e_ != 0) {                                                         \
            fprintf(stderr, "%s:%d %s -> %d\n", __FILE__, __LINE__, #x, (int)e_); \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

__global__ void fill(double* a, int b, unsigned seed, int spd) {
    long n = (long)b * b;
    for (long t = blockIdx.x * (long)blockDim.x + threadIdx.x; t < n; t += (long)gridDim.x * blockDim.x) {
        int i = t % b, j = t / b;
        double v = 1.0 / (1.0 + abs(i - j)) + 1e-3 * ((seed * 2654435761u + i * 31 + j) % 97) / 97.0;
        if (spd && i == j) v += b;
        a[t] = v;
    }
}

// As the study's LEAF_INVERSE: a thread block a leaf, a thread a column.
__global__ void leaf_inverse(const double* L, double* X, int ld, int n) {
    extern __shared__ double x[];
    const double* l = L + (size_t)blockIdx.x * n * (ld + 1);
    double* out = X + (size_t)blockIdx.x * n * (ld + 1);
    int t = threadIdx.x;
    for (int i = 0; i < n; i++) {
        double v = 0;
        if (i >= t) {
            v = i == t ? 1.0 : 0.0;
            for (int k = t; k < i; k++) v -= l[i + (size_t)k * ld] * x[k * n + t];
            v /= l[i + (size_t)i * ld];
        }
        x[i * n + t] = v;
    }
    for (int i = 0; i < n; i++) out[i + (size_t)t * ld] = x[i * n + t];
}

static const double ONE = 1, MINUS = -1, ZERO = 0;

static void fast_inverse(cublasHandle_t h, const double* L, double* X, double* T, int n, int leaf, cudaStream_t s) {
    CK(cudaMemsetAsync(X, 0, sizeof(double) * n * n, s));
    leaf_inverse<<<n / leaf, leaf, sizeof(double) * leaf * leaf, s>>>(L, X, n, leaf);
    for (int w = leaf; w < n; w *= 2) {
        long stride = 2L * w * (n + 1);
        int batch = n / (2 * w);
        long off21 = w, off22 = (long)w * n + w;
        CK(cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, w, w, w, &ONE, L + off21, n, stride, X, n, stride,
                                     &ZERO, T + off21, n, stride, batch));
        CK(cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, w, w, w, &MINUS, X + off22, n, stride, T + off21, n,
                                     stride, &ZERO, X + off21, n, stride, batch));
    }
}

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// A place to run: a context (primary or green), a stream in it, and library handles.
struct Place {
    CUcontext ctx;
    cudaStream_t s;
    cublasHandle_t blas;
    cusolverDnHandle_t sol;
    cusolverDnParams_t params;
};

static Place make_place(CUcontext ctx, CUgreenCtx green, int priority, bool solver) {
    Place p{};
    p.ctx = ctx;
    CK(cuCtxSetCurrent(ctx));
    if (green) {
        CUstream s;
        CK(cuGreenCtxStreamCreate(&s, green, CU_STREAM_NON_BLOCKING, priority));
        p.s = (cudaStream_t)s;
    } else {
        CK(cudaStreamCreateWithPriority(&p.s, cudaStreamNonBlocking, priority));
    }
    CK(cublasCreate(&p.blas));
    CK(cublasSetStream(p.blas, p.s));
    if (solver) {
        CK(cusolverDnCreate(&p.sol));
        CK(cusolverDnSetStream(p.sol, p.s));
        CK(cusolverDnCreateParams(&p.params));
    }
    return p;
}

int main(int argc, char** argv) {
    const int BG = 15, REPS = 7;
    CK(cuInit(0));
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    CUcontext primary;
    CK(cuDevicePrimaryCtxRetain(&primary, dev));
    CK(cuCtxSetCurrent(primary));
    int least, greatest, sms;
    CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    printf("SMs %d\n", sms);
    for (int a = 1; a < argc; a++) {
        int b = atoi(argv[a]);
        size_t bytes = sizeof(double) * b * b;
        CK(cuCtxSetCurrent(primary));
        double *A, *L, *X, *T, *P, *Q, *Y, *Z;
        for (double** p : {&A, &L, &X, &T, &P, &Q, &Y, &Z}) CK(cudaMalloc(p, bytes));
        fill<<<1024, 256>>>(A, b, 1, 1);
        fill<<<1024, 256>>>(P, b, 2, 0);
        fill<<<1024, 256>>>(Z, b, 3, 0);
        std::vector<double*> bt(3 * BG);
        for (int t = 0; t < 3 * BG; t++) {
            CK(cudaMalloc(&bt[t], bytes));
            fill<<<1024, 256>>>(bt[t], b, 50 + t, 0);
        }
        int* info;
        CK(cudaMalloc(&info, sizeof(int)));
        CK(cudaDeviceSynchronize());
        // K = 0: no split, as the study runs now.
        for (int K : {0, 8, 16, 24, 32, 0}) {
            CUcontext cctx = primary, lctx = primary;
            CUgreenCtx gc = nullptr, gl = nullptr;
            int got = sms, rest = sms;
            if (K > 0) {
                CUdevResource all, group, remaining;
                CK(cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
                unsigned n = 1;
                CK(cuDevSmResourceSplitByCount(&group, &n, &all, &remaining, 0, K));
                CUdevResourceDesc dc, dl;
                CK(cuDevResourceGenerateDesc(&dc, &group, 1));
                CK(cuDevResourceGenerateDesc(&dl, &remaining, 1));
                CK(cuGreenCtxCreate(&gc, dc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
                CK(cuGreenCtxCreate(&gl, dl, dev, CU_GREEN_CTX_DEFAULT_STREAM));
                CK(cuCtxFromGreenCtx(&cctx, gc));
                CK(cuCtxFromGreenCtx(&lctx, gl));
                got = group.sm.smCount;
                rest = remaining.sm.smCount;
            }
            Place c = make_place(cctx, gc, greatest, true);
            std::vector<Place> bg;
            for (int i = 0; i < BG; i++) bg.push_back(make_place(lctx, gl, least, false));
            CK(cuCtxSetCurrent(cctx));
            size_t d, hsz;
            CK(cusolverDnXpotrf_bufferSize(c.sol, c.params, CUBLAS_FILL_MODE_LOWER, b, CUDA_R_64F, A, b, CUDA_R_64F,
                                           &d, &hsz));
            void* work;
            CK(cudaMalloc(&work, std::max<size_t>(d, 8)));
            std::vector<char> hwork(hsz + 8);
            cudaEvent_t e0, e1;
            CK(cudaEventCreate(&e0));
            CK(cudaEventCreate(&e1));
            auto chain = [&] {
                CK(cuCtxSetCurrent(cctx));
                CK(cudaMemcpyAsync(L, A, bytes, cudaMemcpyDeviceToDevice, c.s));
                CK(cusolverDnXpotrf(c.sol, c.params, CUBLAS_FILL_MODE_LOWER, b, CUDA_R_64F, L, b, CUDA_R_64F, work,
                                    std::max<size_t>(d, 8), hwork.data(), hwork.size(), info));
                fast_inverse(c.blas, L, X, T, b, 32, c.s);
                CK(cublasDgemm(c.blas, CUBLAS_OP_N, CUBLAS_OP_T, b, b, b, &ONE, P, b, X, b, &ZERO, Q, b));
                CK(cublasDsyrk(c.blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, b, b, &MINUS, Q, b, &ONE, Y, b));
            };
            auto potrf_only = [&] {
                CK(cuCtxSetCurrent(cctx));
                CK(cudaMemcpyAsync(L, A, bytes, cudaMemcpyDeviceToDevice, c.s));
                CK(cusolverDnXpotrf(c.sol, c.params, CUBLAS_FILL_MODE_LOWER, b, CUDA_R_64F, L, b, CUDA_R_64F, work,
                                    std::max<size_t>(d, 8), hwork.data(), hwork.size(), info));
            };
            auto load = [&](int gemms) {
                CK(cuCtxSetCurrent(lctx));
                for (int r = 0; r < gemms; r++)
                    for (int i = 0; i < BG; i++)
                        CK(cublasDgemm(bg[i].blas, CUBLAS_OP_N, CUBLAS_OP_T, b, b, b, &MINUS, bt[3 * i], b,
                                       bt[3 * i + 1], b, &ONE, bt[3 * i + 2], b));
            };
            auto sync_all = [&] {
                CK(cudaStreamSynchronize(c.s));
                for (auto& p : bg) CK(cudaStreamSynchronize(p.s));
            };
            auto timed = [&](const char* name, bool under, const std::function<void()>& f) {
                std::vector<float> ms;
                for (int r = 0; r < REPS; r++) {
                    sync_all();
                    if (under) {
                        load(6);
                        usleep(300);
                    }
                    CK(cuCtxSetCurrent(cctx));
                    CK(cudaEventRecord(e0, c.s));
                    f();
                    CK(cuCtxSetCurrent(cctx));
                    CK(cudaEventRecord(e1, c.s));
                    if (under) load(8);
                    CK(cudaEventSynchronize(e1));
                    float t;
                    CK(cudaEventElapsedTime(&t, e0, e1));
                    ms.push_back(t);
                }
                sync_all();
                printf("b=%d K=%2d (chain %3d SMs, load %3d) %-12s %-11s %8.1f us (median of %d; min %.1f)\n", b, K,
                       got, rest, name, under ? "under load" : "alone", median(ms) * 1e3, REPS,
                       *std::min_element(ms.begin(), ms.end()) * 1e3);
            };
            chain();
            sync_all();
            for (bool under : {false, true}) {
                timed("potrf", under, potrf_only);
                timed("chain", under, chain);
            }
            // The load alone: 15 x 16 GEMMs, host wall.
            std::vector<float> lw;
            for (int r = 0; r < 5; r++) {
                sync_all();
                auto t0 = std::chrono::steady_clock::now();
                load(16);
                sync_all();
                lw.push_back(std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - t0).count());
            }
            printf("b=%d K=%2d (chain %3d SMs, load %3d) load of %d GEMMs alone %8.1f us (median of 5)\n", b, K, got,
                   rest, BG * 16, median(lw) * 1e3);
            sync_all();
            cudaFree(work);
            CK(cuCtxSetCurrent(cctx));
            cudaEventDestroy(e0);
            cudaEventDestroy(e1);
            cusolverDnDestroy(c.sol);
            cublasDestroy(c.blas);
            cudaStreamDestroy(c.s);
            CK(cuCtxSetCurrent(lctx));
            for (auto& p : bg) {
                cublasDestroy(p.blas);
                cudaStreamDestroy(p.s);
            }
            CK(cuCtxSetCurrent(primary));
            if (gc) CK(cuGreenCtxDestroy(gc));
            if (gl) CK(cuGreenCtxDestroy(gl));
        }
        for (double* p : {A, L, X, T, P, Q, Y, Z}) cudaFree(p);
        for (double* p : bt) cudaFree(p);
        cudaFree(info);
    }
    return 0;
}

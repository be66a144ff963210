// The tiled Cholesky's chain from one step to the next, timed on one GPU: POTRF of the
// diagonal tile, then the solve of the next row's tile (A <- A L^-T), done the ways the
// study could: cuBLAS's TRSM whole; the TRSM cut into row strips on their own streams;
// or L^-1 made by a recursive inverse (leaves by a TRSM against the identity, halves
// joined by two TRMMs) and the tile multiplied by it (TRMM out of place). Each way runs
// alone, and on a high-priority stream while 15 streams of default priority run GEMMs of
// the same order (as the bench's trailing update keeps the GPU). Also: cuSOLVER's POTRF
// and the inverse at several orders, and the recursive inverse checked against the
// TRSM against the identity.
//
// Build and run there: nvcc -O3 -arch=sm_90 panel_chain.cu -lcublas -lcusolver -o pc
//                      ./pc 2048 1024
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <algorithm>
#include <cmath>
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

// X (n x n, leading dimension ld) <- the identity.
__global__ void identity(double* x, int n, int ld) {
    long m = (long)n * n;
    for (long t = blockIdx.x * (long)blockDim.x + threadIdx.x; t < m; t += (long)gridDim.x * blockDim.x) {
        int i = t % n, j = t / n;
        x[(long)j * ld + i] = i == j ? 1.0 : 0.0;
    }
}

// X's diagonal blocks of order n (block z at z·n·(ld + 1)) <- the inverses of L's: one
// thread block a leaf, thread t solves L x = e_t by forward substitution (columns are
// independent: no barrier), x in shared memory; the upper triangle written as zeros.
__global__ void leaf_inverse(const double* L, double* X, int ld, int n) {
    extern __shared__ double x[];  // x[i * n + t]
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

struct Ctx {
    cublasHandle_t blas;
    cusolverDnHandle_t sol;
    cusolverDnParams_t params;
    void *work, *hwork;
    size_t lwork, lhwork;
    int* info;
};

static const double ONE = 1, MINUS = -1;

// X <- L^-1 (lower, order n, both leading dimension ld), T scratch (ld), leaves of `leaf`.
static void inverse(cublasHandle_t h, const double* L, double* X, double* T, int n, int ld, int leaf,
                    cudaStream_t s) {
    if (n <= leaf) {
        identity<<<256, 256, 0, s>>>(X, n, ld);
        CK(cublasDtrsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, n, n, &ONE, L,
                       ld, X, ld));
        return;
    }
    int k = n / 2, m = n - k;
    inverse(h, L, X, T, k, ld, leaf, s);
    inverse(h, L + (long)k * ld + k, X + (long)k * ld + k, T, m, ld, leaf, s);
    // X21 = -X22 L21 X11: T = L21 X11, then X21 = -X22 T.
    CK(cublasDtrmm(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, m, k, &ONE, X, ld,
                   L + k, ld, T, ld));
    CK(cublasDtrmm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, m, k, &MINUS,
                   X + (long)k * ld + k, ld, T, ld, X + k, ld));
}

// X <- L^-1 (order n, leading dimension n) with few launches: X zeroed, the leaves of
// order `leaf` by one kernel, then each level's joins as two strided-batched GEMMs
// (T = L21 X11; X21 = -X22 T), the zero upper triangles making GEMM a TRMM.
static void fast_inverse(cublasHandle_t h, const double* L, double* X, double* T, int n, int leaf, cudaStream_t s) {
    CK(cudaMemsetAsync(X, 0, sizeof(double) * n * n, s));
    leaf_inverse<<<n / leaf, leaf, sizeof(double) * leaf * leaf, s>>>(L, X, n, leaf);
    const double zero = 0;
    for (int w = leaf; w < n; w *= 2) {
        long stride = 2L * w * (n + 1);
        int batch = n / (2 * w);
        long off21 = w;  // block (w, 0) of each join
        long off22 = (long)w * n + w;
        CK(cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, w, w, w, &ONE, L + off21, n, stride, X, n, stride,
                                     &zero, T + off21, n, stride, batch));
        CK(cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, w, w, w, &MINUS, X + off22, n, stride, T + off21, n,
                                     stride, &zero, X + off21, n, stride, batch));
    }
}

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char** argv) {
    const int BG = 15, REPS = 7;
    int least, greatest;
    CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaStream_t hi, strips[4];
    CK(cudaStreamCreateWithPriority(&hi, cudaStreamNonBlocking, greatest));
    for (auto& s : strips) CK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest));
    Ctx c;
    CK(cublasCreate(&c.blas));
    CK(cusolverDnCreate(&c.sol));
    CK(cusolverDnCreateParams(&c.params));
    std::vector<cublasHandle_t> sh(4);
    for (int i = 0; i < 4; i++) {
        CK(cublasCreate(&sh[i]));
        CK(cublasSetStream(sh[i], strips[i]));
    }
    CK(cublasSetStream(c.blas, hi));
    CK(cusolverDnSetStream(c.sol, hi));
    CK(cudaMalloc(&c.info, sizeof(int)));
    cudaEvent_t e0, e1, fork, joins[4];
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    for (auto& j : joins) CK(cudaEventCreateWithFlags(&j, cudaEventDisableTiming));
    for (int a = 1; a < argc; a++) {
        int b = atoi(argv[a]);
        size_t bytes = sizeof(double) * b * b;
        double *A, *L, *X, *T, *P, *Q, *Y;
        for (double** p : {&A, &L, &X, &T, &P, &Q, &Y}) CK(cudaMalloc(p, bytes));
        fill<<<1024, 256>>>(A, b, 1, 1);
        fill<<<1024, 256>>>(P, b, 2, 0);
        size_t d, hsz;
        CK(cusolverDnXpotrf_bufferSize(c.sol, c.params, CUBLAS_FILL_MODE_LOWER, b, CUDA_R_64F, A, b, CUDA_R_64F, &d,
                                       &hsz));
        c.lwork = std::max<size_t>(d, 8);
        c.lhwork = hsz + 8;
        CK(cudaMalloc(&c.work, c.lwork));
        c.hwork = malloc(c.lhwork);
        auto potrf = [&](int n) {
            CK(cudaMemcpy2DAsync(L, sizeof(double) * b, A, sizeof(double) * b, sizeof(double) * n, n,
                                 cudaMemcpyDeviceToDevice, hi));
            CK(cusolverDnXpotrf(c.sol, c.params, CUBLAS_FILL_MODE_LOWER, n, CUDA_R_64F, L, b, CUDA_R_64F, c.work,
                                c.lwork, c.hwork, c.lhwork, c.info));
        };
        potrf(b);
        CK(cudaDeviceSynchronize());
        // Background: 15 default-priority streams of GEMMs on tiles of their own.
        std::vector<cudaStream_t> bs(BG);
        std::vector<cublasHandle_t> bh(BG);
        std::vector<double*> bt(3 * BG);
        for (int i = 0; i < BG; i++) {
            CK(cudaStreamCreateWithFlags(&bs[i], cudaStreamNonBlocking));
            CK(cublasCreate(&bh[i]));
            CK(cublasSetStream(bh[i], bs[i]));
            for (int t = 0; t < 3; t++) {
                CK(cudaMalloc(&bt[3 * i + t], bytes));
                fill<<<1024, 256>>>(bt[3 * i + t], b, 50 + 3 * i + t, 0);
            }
        }
        auto load = [&](int gemms) {
            for (int r = 0; r < gemms; r++)
                for (int i = 0; i < BG; i++)
                    CK(cublasDgemm(bh[i], CUBLAS_OP_N, CUBLAS_OP_T, b, b, b, &MINUS, bt[3 * i], b, bt[3 * i + 1], b,
                                   &ONE, bt[3 * i + 2], b));
        };
        // One way, timed on `hi` from its first command to its last; `under`: behind a load.
        auto timed = [&](const char* name, bool under, const std::function<void()>& f) {
            std::vector<float> ms;
            for (int r = 0; r < REPS; r++) {
                CK(cudaDeviceSynchronize());
                if (under) {
                    load(6);
                    usleep(300);  // the load fills the GPU first
                }
                CK(cudaEventRecord(e0, hi));
                f();
                CK(cudaEventRecord(e1, hi));
                if (under) load(8);
                CK(cudaEventSynchronize(e1));
                float t;
                CK(cudaEventElapsedTime(&t, e0, e1));
                ms.push_back(t);
            }
            CK(cudaDeviceSynchronize());
            printf("b=%d %-44s %-11s %8.1f us (median of %d; min %.1f)\n", b, name, under ? "under load" : "alone",
                   median(ms) * 1e3, REPS, *std::min_element(ms.begin(), ms.end()) * 1e3);
        };
        auto trsm = [&](cublasHandle_t h, int rows, double* tile) {
            CK(cublasDtrsm(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, CUBLAS_DIAG_NON_UNIT, rows, b,
                           &ONE, L, b, tile, b));
        };
        auto strips_trsm = [&](int k) {
            CK(cudaEventRecord(fork, hi));
            int rows = b / k;
            for (int i = 0; i < k; i++) {
                CK(cudaStreamWaitEvent(strips[i], fork, 0));
                trsm(sh[i], rows, Q + i * rows);
                CK(cudaEventRecord(joins[i], strips[i]));
                CK(cudaStreamWaitEvent(hi, joins[i], 0));
            }
        };
        auto trmm_out = [&]() {
            CK(cublasDtrmm(c.blas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, CUBLAS_DIAG_NON_UNIT, b, b,
                           &ONE, X, b, Q, b, Y, b));
        };
        auto inverse_by_trsm = [&]() {
            identity<<<256, 256, 0, hi>>>(X, b, b);
            CK(cublasDtrsm(c.blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, b, b,
                           &ONE, L, b, X, b));
        };
        // Check: the recursive inverses against the TRSM against the identity (fast: leaf + 1000).
        for (int leaf : {128, 256, 512, 1032, 1064}) {
            if (leaf % 1000 >= b) continue;
            inverse_by_trsm();
            CK(cudaMemcpyAsync(Y, X, bytes, cudaMemcpyDeviceToDevice, hi));
            CK(cudaMemsetAsync(X, 0, bytes, hi));
            if (leaf > 1000)
                fast_inverse(c.blas, L, X, T, b, leaf - 1000, hi);
            else
                inverse(c.blas, L, X, T, b, b, leaf, hi);
            CK(cudaDeviceSynchronize());
            std::vector<double> p((size_t)b * b), q((size_t)b * b);
            CK(cudaMemcpy(p.data(), X, bytes, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(q.data(), Y, bytes, cudaMemcpyDeviceToHost));
            double md = 0, mx = 0;
            for (int j = 0; j < b; j++)
                for (int i = j; i < b; i++) {
                    size_t t = (size_t)j * b + i;
                    md = fmax(md, fabs(p[t] - q[t]));
                    mx = fmax(mx, fabs(q[t]));
                }
            printf("b=%d check leaf %d: max |recursive - trsm against I| = %.3e (max |L^-1| %.3e)\n", b, leaf, md, mx);
        }
        for (int round = 0; round < 2; round++) {
            for (bool under : {false, true}) {
                for (int n : {256, 512, 1024, 2048}) {
                    if (n > b) continue;
                    char name[64];
                    snprintf(name, sizeof name, "potrf %d", n);
                    timed(name, under, [&] { potrf(n); });
                }
                timed("trsm against I (the INVERSE task)", under, inverse_by_trsm);
                for (int leaf : {128, 256, 512}) {
                    if (leaf >= b) continue;
                    char name[64];
                    snprintf(name, sizeof name, "recursive inverse, leaves %d", leaf);
                    timed(name, under, [&] { inverse(c.blas, L, X, T, b, b, leaf, hi); });
                }
                for (int leaf : {32, 64}) {
                    char name[64];
                    snprintf(name, sizeof name, "fast inverse, leaves %d", leaf);
                    timed(name, under, [&] { fast_inverse(c.blas, L, X, T, b, leaf, hi); });
                }
                timed("leaf kernel alone, leaves 64", under, [&] {
                    leaf_inverse<<<b / 64, 64, sizeof(double) * 64 * 64, hi>>>(L, X, b, 64);
                });
                timed("syrk", under, [&] {
                    CK(cublasDsyrk(c.blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, b, b, &MINUS, P, b, &ONE, Y, b));
                });
                timed("trsm whole (the first TRSM)", under, [&] {
                    CK(cudaMemcpyAsync(Q, P, bytes, cudaMemcpyDeviceToDevice, hi));
                    trsm(c.blas, b, Q);
                });
                for (int k : {2, 4}) {
                    char name[64];
                    snprintf(name, sizeof name, "trsm in %d row strips on %d streams", k, k);
                    timed(name, under, [&] {
                        CK(cudaMemcpyAsync(Q, P, bytes, cudaMemcpyDeviceToDevice, hi));
                        strips_trsm(k);
                    });
                }
                timed("trmm by L^-1 out of place", under, trmm_out);
                // The chains, POTRF to the next row's L.
                timed("chain: potrf, trsm", under, [&] {
                    CK(cudaMemcpyAsync(Q, P, bytes, cudaMemcpyDeviceToDevice, hi));
                    potrf(b);
                    trsm(c.blas, b, Q);
                });
                timed("chain: potrf, trsm in 4 strips", under, [&] {
                    CK(cudaMemcpyAsync(Q, P, bytes, cudaMemcpyDeviceToDevice, hi));
                    potrf(b);
                    strips_trsm(4);
                });
                timed("chain: potrf, fast inverse (64), trmm", under, [&] {
                    CK(cudaMemcpyAsync(Q, P, bytes, cudaMemcpyDeviceToDevice, hi));
                    potrf(b);
                    fast_inverse(c.blas, L, X, T, b, 64, hi);
                    trmm_out();
                });
                timed("chain: potrf, recursive inverse (256), trmm", under, [&] {
                    CK(cudaMemcpyAsync(Q, P, bytes, cudaMemcpyDeviceToDevice, hi));
                    potrf(b);
                    inverse(c.blas, L, X, T, b, b, 256, hi);
                    trmm_out();
                });
            }
        }
        CK(cudaDeviceSynchronize());
        for (int i = 0; i < BG; i++) {
            cublasDestroy(bh[i]);
            cudaStreamDestroy(bs[i]);
            for (int t = 0; t < 3; t++) cudaFree(bt[3 * i + t]);
        }
        for (double* p : {A, L, X, T, P, Q, Y}) cudaFree(p);
        cudaFree(c.work);
        free(c.hwork);
    }
    return 0;
}

// Tile kernels of the tiled Cholesky, timed on one GPU: how fast cuBLAS's TRSM (the
// panel's solve, A_ik <- A_ik L_kk^-T) runs against the GEMM of the same order, and the
// ways of doing that solve as a multiply by L_kk^-1 computed once a step (cuSOLVER's
// trtri, then cuBLAS's TRMM in place or out of place, or a GEMM with the inverse's zero
// upper triangle). Each operation runs alone on one stream (reps back to back) and as
// the bench runs it: many at once over 16 streams, on distinct tiles.
//
// Build and run there: nvcc -O3 -arch=sm_90 tile_kernels.cu -lcublas -lcusolver -o tk
//                      ./tk 2048 4096 1024
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                            \
    do {                                                                                 \
        auto e_ = (x);                                                                   \
        if ((int)e_ != 0) {                                                              \
            fprintf(stderr, "%s:%d %s -> %d\n", __FILE__, __LINE__, #x, (int)e_);      \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

__global__ void fill_spd(double* a, int b, unsigned seed) {
    // A diagonally dominant symmetric tile: 1/(1+|i-j|) plus b on the diagonal.
    long n = (long)b * b;
    for (long t = blockIdx.x * (long)blockDim.x + threadIdx.x; t < n; t += (long)gridDim.x * blockDim.x) {
        int i = t % b, j = t / b;
        double v = 1.0 / (1.0 + abs(i - j)) + 1e-3 * ((seed * 2654435761u + i * 31 + j) % 97) / 97.0;
        if (i == j) v += b;
        a[t] = v;
    }
}

enum Kind { GEMM, TRSM, SYRK, TRMM_IN, TRMM_OUT, GEMM_INV, TRTRI, POTRF, KINDS };
static const char* NAMES[] = {"gemm", "trsm", "syrk", "trmm-in-place", "trmm-out-of-place",
                              "gemm-by-inverse", "trtri", "potrf"};

struct Slot {
    cublasHandle_t blas;
    cusolverDnHandle_t sol;
    cusolverDnParams_t params;
    cudaStream_t s;
    double *x, *y, *z;  // three tiles
    void* work;
    size_t lwork;
    void* hwork;
    size_t lhwork;
    int* info;
};

static double flops(Kind k, double b) {
    switch (k) {
        case GEMM: case GEMM_INV: return 2 * b * b * b;
        case TRSM: case SYRK: case TRMM_IN: case TRMM_OUT: return b * b * b;
        case TRTRI: case POTRF: return b * b * b / 3;
        default: return 0;
    }
}

static double* SPD;  // the SPD tile POTRF factorises (a copy each time)

static void op(Kind k, Slot& sl, double* L, double* Linv, int b) {
    const double one = 1, minus = -1, zero = 0;
    switch (k) {
        case GEMM:
            CK(cublasDgemm(sl.blas, CUBLAS_OP_N, CUBLAS_OP_T, b, b, b, &minus, sl.x, b, sl.y, b, &one, sl.z, b));
            break;
        case TRSM:
            CK(cublasDtrsm(sl.blas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, CUBLAS_DIAG_NON_UNIT, b,
                           b, &one, L, b, sl.x, b));
            break;
        case SYRK:
            CK(cublasDsyrk(sl.blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, b, b, &minus, sl.x, b, &one, sl.z, b));
            break;
        case TRMM_IN:
            CK(cublasDtrmm(sl.blas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, CUBLAS_DIAG_NON_UNIT, b,
                           b, &one, Linv, b, sl.x, b, sl.x, b));
            break;
        case TRMM_OUT:
            CK(cublasDtrmm(sl.blas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, CUBLAS_DIAG_NON_UNIT, b,
                           b, &one, Linv, b, sl.x, b, sl.y, b));
            break;
        case GEMM_INV:
            CK(cublasDgemm(sl.blas, CUBLAS_OP_N, CUBLAS_OP_T, b, b, b, &one, sl.x, b, Linv, b, &zero, sl.y, b));
            break;
        case TRTRI:
            CK(cudaMemcpyAsync(sl.z, L, sizeof(double) * b * b, cudaMemcpyDeviceToDevice, sl.s));
            CK(cusolverDnXtrtri(sl.sol, CUBLAS_FILL_MODE_LOWER, CUBLAS_DIAG_NON_UNIT, b, CUDA_R_64F, sl.z, b, sl.work,
                                sl.lwork, sl.hwork, sl.lhwork, sl.info));
            break;
        case POTRF:
            CK(cudaMemcpyAsync(sl.z, SPD, sizeof(double) * b * b, cudaMemcpyDeviceToDevice, sl.s));
            CK(cusolverDnXpotrf(sl.sol, sl.params, CUBLAS_FILL_MODE_LOWER, b, CUDA_R_64F, sl.z, b, CUDA_R_64F, sl.work,
                                sl.lwork, sl.hwork, sl.lhwork, sl.info));
            break;
        default: break;
    }
}

int main(int argc, char** argv) {
    const int S = 16, REPS = 24;
    for (int a = 1; a < argc; a++) {
        int b = atoi(argv[a]);
        size_t bytes = sizeof(double) * b * b;
        std::vector<Slot> slots(S);
        double *L, *Linv, *A;
        CK(cudaMalloc(&L, bytes));
        CK(cudaMalloc(&Linv, bytes));
        CK(cudaMalloc(&A, bytes));
        fill_spd<<<1024, 256>>>(A, b, 1);
        CK(cudaMemcpy(L, A, bytes, cudaMemcpyDeviceToDevice));
        SPD = A;
        size_t wmax = 0;
        for (int i = 0; i < S; i++) {
            Slot& sl = slots[i];
            CK(cudaStreamCreateWithFlags(&sl.s, cudaStreamNonBlocking));
            CK(cublasCreate(&sl.blas));
            CK(cublasSetStream(sl.blas, sl.s));
            CK(cusolverDnCreate(&sl.sol));
            CK(cusolverDnSetStream(sl.sol, sl.s));
            CK(cusolverDnCreateParams(&sl.params));
            CK(cudaMalloc(&sl.x, bytes));
            CK(cudaMalloc(&sl.y, bytes));
            CK(cudaMalloc(&sl.z, bytes));
            fill_spd<<<1024, 256>>>(sl.x, b, 10 + i);
            fill_spd<<<1024, 256>>>(sl.y, b, 100 + i);
            fill_spd<<<1024, 256>>>(sl.z, b, 1000 + i);
            size_t d1, h1, d2, h2;
            CK(cusolverDnXtrtri_bufferSize(sl.sol, CUBLAS_FILL_MODE_LOWER, CUBLAS_DIAG_NON_UNIT, b, CUDA_R_64F, L, b,
                                           &d1, &h1));
            CK(cusolverDnXpotrf_bufferSize(sl.sol, sl.params, CUBLAS_FILL_MODE_LOWER, b, CUDA_R_64F, L, b, CUDA_R_64F,
                                           &d2, &h2));
            sl.lwork = d1 > d2 ? d1 : d2;
            if (sl.lwork < 8) sl.lwork = 8;
            wmax = wmax > sl.lwork ? wmax : sl.lwork;
            CK(cudaMalloc(&sl.work, sl.lwork));
            sl.lhwork = (h1 > h2 ? h1 : h2) + 8;
            sl.hwork = malloc(sl.lhwork);
            CK(cudaMalloc(&sl.info, sizeof(int)));
        }
        // L = chol(A); Linv = L^-1 by trtri on a copy of L whose upper triangle is cleared.
        CK(cusolverDnXpotrf(slots[0].sol, slots[0].params, CUBLAS_FILL_MODE_LOWER, b, CUDA_R_64F, L, b, CUDA_R_64F,
                            slots[0].work, slots[0].lwork, slots[0].hwork, slots[0].lhwork, slots[0].info));
        CK(cudaStreamSynchronize(slots[0].s));
        {
            std::vector<double> h((size_t)b * b);
            CK(cudaMemcpy(h.data(), L, bytes, cudaMemcpyDeviceToHost));
            for (int j = 0; j < b; j++)
                for (int i = 0; i < j; i++) h[(size_t)j * b + i] = 0;
            CK(cudaMemcpy(Linv, h.data(), bytes, cudaMemcpyHostToDevice));
        }
        CK(cusolverDnXtrtri(slots[0].sol, CUBLAS_FILL_MODE_LOWER, CUBLAS_DIAG_NON_UNIT, b, CUDA_R_64F, Linv, b,
                            slots[0].work, slots[0].lwork, slots[0].hwork, slots[0].lhwork, slots[0].info));
        CK(cudaDeviceSynchronize());
        // Check the two ways of the solve agree on slot 0's x: trsm(x) against x * Linv^T.
        {
            Slot& sl = slots[0];
            CK(cudaMemcpy(sl.y, sl.x, bytes, cudaMemcpyDeviceToDevice));
            op(TRSM, sl, L, Linv, b);  // x <- x L^-T
            const double one = 1, zero = 0;
            CK(cublasDgemm(sl.blas, CUBLAS_OP_N, CUBLAS_OP_T, b, b, b, &one, sl.y, b, Linv, b, &zero, sl.z, b));
            CK(cudaDeviceSynchronize());
            std::vector<double> p((size_t)b * b), q((size_t)b * b);
            CK(cudaMemcpy(p.data(), sl.x, bytes, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(q.data(), sl.z, bytes, cudaMemcpyDeviceToHost));
            double md = 0, mx = 0;
            for (size_t t = 0; t < p.size(); t++) {
                md = fmax(md, fabs(p[t] - q[t]));
                mx = fmax(mx, fabs(p[t]));
            }
            printf("b=%d check: max |trsm - gemm-by-inverse| = %.3e (max |x| %.3e)\n", b, md, mx);
            fill_spd<<<1024, 256>>>(sl.x, b, 10);
        }
        cudaEvent_t e0, e1;
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
        for (int round = 0; round < 3; round++) {
            for (int k = 0; k < KINDS; k++) {
                // Alone: one stream, REPS back to back.
                Slot& sl = slots[0];
                op((Kind)k, sl, L, Linv, b);
                CK(cudaStreamSynchronize(sl.s));
                CK(cudaEventRecord(e0, sl.s));
                for (int r = 0; r < REPS; r++) op((Kind)k, sl, L, Linv, b);
                CK(cudaEventRecord(e1, sl.s));
                CK(cudaEventSynchronize(e1));
                float alone;
                CK(cudaEventElapsedTime(&alone, e0, e1));
                // Many at once: 16 streams, REPS each, after an event on stream 0.
                CK(cudaDeviceSynchronize());
                CK(cudaEventRecord(e0, slots[0].s));
                for (int i = 1; i < S; i++) CK(cudaStreamWaitEvent(slots[i].s, e0, 0));
                for (int r = 0; r < REPS; r++)
                    for (int i = 0; i < S; i++) op((Kind)k, slots[i], L, Linv, b);
                std::vector<cudaEvent_t> ends(S);
                for (int i = 0; i < S; i++) {
                    CK(cudaEventCreate(&ends[i]));
                    CK(cudaEventRecord(ends[i], slots[i].s));
                    CK(cudaStreamWaitEvent(slots[0].s, ends[i], 0));
                }
                CK(cudaEventRecord(e1, slots[0].s));
                CK(cudaEventSynchronize(e1));
                float many;
                CK(cudaEventElapsedTime(&many, e0, e1));
                for (int i = 0; i < S; i++) CK(cudaEventDestroy(ends[i]));
                double f = flops((Kind)k, b);
                double ua = alone * 1e3 / REPS, um = many * 1e3 / (REPS * S);
                printf("b=%d round=%d %-18s alone %8.1f us %6.1f TF/s | 16 streams %8.1f us/op %6.1f TF/s\n", b, round,
                       NAMES[k], ua, f / ua / 1e6, um, f / um / 1e6);
            }
        }
        CK(cudaDeviceSynchronize());
        for (auto& sl : slots) {
            cublasDestroy(sl.blas);
            cusolverDnDestroyParams(sl.params);
            cusolverDnDestroy(sl.sol);
            cudaFree(sl.x); cudaFree(sl.y); cudaFree(sl.z); cudaFree(sl.work); cudaFree(sl.info); free(sl.hwork);
            cudaStreamDestroy(sl.s);
        }
        cudaFree(L); cudaFree(Linv); cudaFree(A);
    }
    return 0;
}

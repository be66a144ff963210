/* The hand-out's protocol alone (src/cluster/handout.rs), to measure
 * its round trip and rank 0's serial service time on this machine: rank 0 answers
 * claims on a thread of its own (MPI_THREAD_MULTIPLE, receive from any source under
 * tag 32701, reply under 32702), the other ranks claim back to back.
 * Build and run (see results/model/cluster-scale/README.md):
 *   mpicc -O2 -pthread handout_probe.c -o probe && mpirun --oversubscribe -np 3 ./probe 20000
 * Prints, per client rank, the mean round trip, and rank 0's claims answered per second. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { TAG_CLAIM = 32701, TAG_REPLY = 32702 };

static void *serve(void *arg) {
    (void)arg;
    uint64_t next = 0;
    for (;;) {
        uint64_t msg[2];
        MPI_Status st;
        int n;
        MPI_Recv(msg, 2, MPI_UINT64_T, MPI_ANY_SOURCE, TAG_CLAIM, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_UINT64_T, &n);
        if (n == 0) return NULL;
        uint64_t start = next;
        next += msg[1];
        MPI_Send(&start, 1, MPI_UINT64_T, st.MPI_SOURCE, TAG_REPLY, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv) {
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) { fprintf(stderr, "no MPI_THREAD_MULTIPLE\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long claims = argc > 1 ? atol(argv[1]) : 20000;
    pthread_t th;
    if (rank == 0) pthread_create(&th, NULL, serve, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (rank != 0) {
        uint64_t msg[2] = {0, 1}, start;
        for (long i = 0; i < claims; i++) {
            MPI_Send(msg, 2, MPI_UINT64_T, 0, TAG_CLAIM, MPI_COMM_WORLD);
            MPI_Recv(&start, 1, MPI_UINT64_T, 0, TAG_REPLY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        double t = MPI_Wtime() - t0;
        printf("rank %d: %ld claims in %.3f s, round trip %.2f us\n", rank, claims, t, 1e6 * t / claims);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    if (rank == 0) {
        printf("rank 0: %ld claims answered in %.3f s: %.0f claims/s, %.2f us a claim (%d clients)\n",
               claims * (size - 1), t, claims * (size - 1) / t, 1e6 * t / (claims * (size - 1)), size - 1);
        MPI_Send(NULL, 0, MPI_UINT64_T, 0, TAG_CLAIM, MPI_COMM_WORLD);
        pthread_join(th, NULL);
    }
    MPI_Finalize();
    return 0;
}

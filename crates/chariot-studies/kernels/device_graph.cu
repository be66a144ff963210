// Device-side execution of a static task graph, after Giles' "Notes on DAG
// software" (2013): the graph lives in device memory as a CSR of successors, every node
// has a counter of unfinished predecessors, and a persistent kernel's blocks take ready
// nodes from a queue, run them and make their successors ready. The host uploads the
// graph once and, per run, launches the reset kernel and the persistent kernel and waits.
//
// The queue is Giles' scheduled-task list: an array of n slots, all -1 at the start but
// for the roots in slots 0..roots-1. A block takes a *ticket* (atomicAdd on the head);
// ticket t < n is the t-th node ever made ready, so the block waits until slot t is
// published (no longer -1) and runs that node; a ticket >= n means every node has been
// handed out and the block exits. A block that finishes a node decrements each
// successor's counter and pushes those that reach zero: atomicAdd on the tail for a
// slot, then an atomic exchange publishes the id in it, so a reader never takes an
// unwritten slot (it waits for the id itself, not for the tail). Every node is pushed
// exactly once, so the n slots suffice and tickets < n are always eventually served.
//
// No deadlock without co-residency: only a running block holds a ticket, and if every
// running block waits while none runs a node, every node made ready has finished; in a
// DAG some unfinished node then has every predecessor finished and was made ready, a
// contradiction. So the grid may be larger than what fits, and GPUs may start late.
//
// Memory ordering: the node's writes are released by a fence (every thread) and a
// __syncthreads before thread 0 decrements the successors' counters; thread 0 fences
// after it reads a published slot (acquire) and the block's __syncthreads passes that on.
// Waiting loads are volatile (never served from L1). With several GPUs (the SYS
// instantiation) the atomics and fences are system-scope, and the control words, the
// counters and the queue live in one GPU's memory that the others reach by peer access.
//
// Errors must not hang the kernel: a node equal to `fail_node` sets the error word
// (DG_ERROR_NODE) and its node id instead of running; every waiting block reads the error
// word and exits, so the run ends with the failed node's successors never run. The
// host's watchdog sets `abort[0]` (mapped pinned host memory) when a run exceeds its
// time; every block reads it (a read over the bus) once DG_ABORT_CYCLES have passed
// since it last did, while it waits and between the nodes it runs (a chain's one block
// never waits), and turns it into DG_ERROR_ABORT. Blocks read the
// error word before every ticket and while they wait, so every block stops at its next
// node boundary once one waiting block has seen the abort (a node's body is not cut
// short).
//
// Node body: the spin kernel's (src/flow/mod.rs, SPIN_SOURCE), `iters[node]` loops of
// two FMAs per thread, thread 0 writes the result to sink[0].

// Control words (ints).
#define DG_HEAD 0        // next ticket
#define DG_TAIL 1        // next free queue slot
#define DG_DONE 2        // nodes finished
#define DG_ERROR 3       // DG_ERROR_NONE, DG_ERROR_NODE or DG_ERROR_ABORT
#define DG_FAILED 4      // the failed node, -1 for none
#define DG_PER_GPU 8     // nodes run by GPU g: control[DG_PER_GPU + g]

#define DG_ERROR_NONE 0
#define DG_ERROR_NODE 1
#define DG_ERROR_ABORT 2

// Clock cycles (about 1 ms) after which a block reads the host's abort word again, while
// it waits or between the nodes it runs.
#define DG_ABORT_CYCLES 2000000
// Clock cycles (about 10 µs) after which a waiting block reads the error word again.
#define DG_ERROR_CYCLES 20000
// Longest back-off between two polls of a queue slot, in ns.
#define DG_MAX_BACKOFF 1024

template <bool SYS> __device__ __forceinline__ int add(int* p, int v) {
    return SYS ? atomicAdd_system(p, v) : atomicAdd(p, v);
}

template <bool SYS> __device__ __forceinline__ void publish(int* p, int v) {
    if (SYS) atomicExch_system(p, v); else atomicExch(p, v);
}

template <bool SYS> __device__ __forceinline__ int cas(int* p, int expected, int v) {
    return SYS ? atomicCAS_system(p, expected, v) : atomicCAS(p, expected, v);
}

template <bool SYS> __device__ __forceinline__ void fence() {
    if (SYS) __threadfence_system(); else __threadfence();
}

// Resets one run's state: every counter to its node's in-degree, the queue to the roots
// followed by empty slots, the control words to zero (the failed node to -1), and the
// sink to zero (so that a sink read after the run was written by it). One thread per
// node (grid-stride); `control_words` covers DG_PER_GPU and the per-GPU counts.
extern "C" __global__ void device_graph_reset(int* control, int control_words, int* remaining, int* queue,
                                              const int* indegree, const int* roots, float* sink, int n,
                                              int nroots) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        remaining[i] = indegree[i];
        queue[i] = i < nroots ? roots[i] : -1;
    }
    if (blockIdx.x == 0) {
        for (int w = threadIdx.x; w < control_words; w += blockDim.x) control[w] = 0;
        __syncthreads();
        if (threadIdx.x == 0) {
            control[DG_TAIL] = nroots;
            control[DG_FAILED] = -1;
            sink[0] = 0.0f;
        }
    }
}

// The persistent loop of one block (see the top of the file). Every branch that ends
// the loop is taken by the whole block (it follows the shared `node`).
template <bool SYS>
__device__ void run(int* control, int* remaining, int* queue, const int* succ_offsets, const int* succ,
                    const unsigned* iters, float* sink, const int* abort, int n, int fail_node, int gpu) {
    __shared__ int node;
    volatile int* vcontrol = control;
    volatile int* vqueue = queue;
    volatile const int* vabort = abort;
    long long checked = clock64();  // when thread 0 last read the abort word
    for (;;) {
        if (threadIdx.x == 0) {
            int got = -1;
            // A block that never waits (a chain's one block) reads the abort word too,
            // once DG_ABORT_CYCLES have passed since it last did.
            const long long now = clock64();
            if (now - checked > DG_ABORT_CYCLES) {
                checked = now;
                if (vabort[0] != 0) cas<SYS>(&control[DG_ERROR], DG_ERROR_NONE, DG_ERROR_ABORT);
            }
            // After an error or an abort no block takes another ticket, so that a block
            // whose next slot is always ready (a chain) stops too.
            const int ticket = vcontrol[DG_ERROR] != DG_ERROR_NONE ? n : add<SYS>(&control[DG_HEAD], 1);
            if (ticket < n) {
                unsigned backoff = 32;
                long long seen = clock64();  // when this wait last read the error word
                for (;;) {
                    const int v = vqueue[ticket];
                    if (v >= 0) {
                        got = v;
                        break;
                    }
                    // The control words share a cache line with the counters every
                    // finished node updates, and the abort word is host memory: both are
                    // read on a clock, not on every poll (polled every time, or every 64
                    // polls, by the waiting blocks they slowed large graphs a
                    // hundredfold). An error is seen within DG_ERROR_CYCLES, an abort
                    // within DG_ABORT_CYCLES.
                    const long long at = clock64();
                    if (at - seen > DG_ERROR_CYCLES) {
                        seen = at;
                        if (vcontrol[DG_ERROR] != DG_ERROR_NONE) break;
                        if (at - checked > DG_ABORT_CYCLES) {
                            checked = at;
                            if (vabort[0] != 0) {
                                cas<SYS>(&control[DG_ERROR], DG_ERROR_NONE, DG_ERROR_ABORT);
                                break;
                            }
                        }
                    }
                    __nanosleep(backoff);
                    if (backoff < DG_MAX_BACKOFF) backoff *= 2;
                }
            }
            // Acquire: what the node's predecessors wrote before they counted it down.
            fence<SYS>();
            node = got;
        }
        __syncthreads();
        const int t = node;
        if (t < 0) return;
        if (t == fail_node) {
            if (threadIdx.x == 0) {
                publish<SYS>(&control[DG_FAILED], t);
                fence<SYS>();
                publish<SYS>(&control[DG_ERROR], DG_ERROR_NODE);
            }
            return;
        }
        float a = threadIdx.x * 1e-3f, b = 1.0001f;
        const unsigned it = iters[t];
        for (unsigned i = 0; i < it; ++i) {
            a = fmaf(a, b, 1e-4f);
            b = fmaf(b, 0.9999f, 1e-5f);
        }
        if (threadIdx.x == 0) sink[0] = a + b;
        // Release: every thread's writes before thread 0 makes a successor ready. The
        // barrier also keeps thread 0 from rewriting `node` before all have read it.
        fence<SYS>();
        __syncthreads();
        if (threadIdx.x == 0) {
            const int end = succ_offsets[t + 1];
            for (int e = succ_offsets[t]; e < end; ++e) {
                const int s = succ[e];
                if (add<SYS>(&remaining[s], -1) == 1) {
                    const int slot = add<SYS>(&control[DG_TAIL], 1);
                    publish<SYS>(&queue[slot], s);
                }
            }
            add<SYS>(&control[DG_DONE], 1);
            add<SYS>(&control[DG_PER_GPU + gpu], 1);
        }
    }
}

// One GPU: device-scope atomics, everything in this GPU's memory (`abort` is mapped
// host memory).
extern "C" __global__ void device_graph_run(int* control, int* remaining, int* queue, const int* succ_offsets,
                                            const int* succ, const unsigned* iters, float* sink, const int* abort,
                                            int n, int fail_node, int gpu) {
    run<false>(control, remaining, queue, succ_offsets, succ, iters, sink, abort, n, fail_node, gpu);
}

// Several GPUs: system-scope atomics and fences; `control`, `remaining` and `queue` are
// one GPU's memory (peer memory for the others), the graph and `sink` this GPU's own.
extern "C" __global__ void device_graph_run_system(int* control, int* remaining, int* queue,
                                                   const int* succ_offsets, const int* succ, const unsigned* iters,
                                                   float* sink, const int* abort, int n, int fail_node, int gpu) {
    run<true>(control, remaining, queue, succ_offsets, succ, iters, sink, abort, n, fail_node, gpu);
}

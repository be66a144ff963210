// How the pages of pinned host memory set its copy rates: the same copies from buffers
// pinned three ways, alternated, several times in one process.
//
//   hostalloc  cudaHostAlloc(portable), as chariot's `alloc_host` did;
//   thp        an anonymous mmap advised MADV_HUGEPAGE, written, then cudaHostRegister
//              (portable): 2 MiB pages where the kernel has them;
//   nothp      the same advised MADV_NOHUGEPAGE: 4 KiB pages;
//   kept       one hostalloc pair made at the start and used in every trial.
//
// Each trial of a mode allocates two buffers of GB GiB (A, filled, and L, zeroed, as the
// tiled Cholesky's host side), copies A up in CHUNK_MB chunks (each visible GPU its
// share, all at once; then GPU 0 alone), copies it back down into L, then both ways at
// once, and frees both. Prints one line a trial and mode with the rates in GB/s (1e9),
// the allocation's time and the process's AnonHugePages after it.
//
//   nvcc -O3 -arch=sm_90 pinned_pages.cu -o pinned_pages
//   ./pinned_pages GB CHUNK_MB TRIALS
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,              \
                         cudaGetErrorString(e_));                                          \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)

using Clock = std::chrono::steady_clock;

static double secs(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

static long huge_kb() {
    FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
    if (!f) return -1;
    char line[256];
    long kb = -1;
    while (std::fgets(line, sizeof line, f)) {
        if (std::strncmp(line, "AnonHugePages:", 14) == 0) kb = std::atol(line + 14);
    }
    std::fclose(f);
    return kb;
}

struct Pair {
    char* a = nullptr;
    char* l = nullptr;
    std::string mode;
};

static char* alloc_one(const std::string& mode, size_t bytes) {
    if (mode == "hostalloc") {
        void* p = nullptr;
        CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
        return static_cast<char*>(p);
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        std::perror("mmap");
        std::exit(1);
    }
    if (madvise(p, bytes, mode == "thp" ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0) std::perror("madvise");
    std::memset(p, 0, bytes);  // the pages are faulted in here, huge where advised
    CHECK(cudaHostRegister(p, bytes, cudaHostRegisterPortable));
    return static_cast<char*>(p);
}

static void free_one(const std::string& mode, char* p, size_t bytes) {
    if (mode == "hostalloc") {
        CHECK(cudaFreeHost(p));
        return;
    }
    CHECK(cudaHostUnregister(p));
    munmap(p, bytes);
}

// Copies `bytes` of host memory from `h` (up) or into it (down) on `gpus` GPUs at once,
// each its share, in `chunk` pieces; returns GB/s over the wall time.
static double copy(const std::vector<int>& gpus, std::vector<char*>& dev, std::vector<cudaStream_t>& up,
                   std::vector<cudaStream_t>& down, char* ha, char* hl, size_t bytes, size_t chunk, bool do_up,
                   bool do_down) {
    size_t share = bytes / gpus.size() / chunk * chunk;
    auto t0 = Clock::now();
    for (size_t k = 0; k < gpus.size(); ++k) {
        CHECK(cudaSetDevice(gpus[k]));
        size_t half = share / 2 / chunk * chunk;  // both ways: up into one half, down from the other
        for (size_t off = 0; off < share; off += chunk) {
            size_t host_off = k * share + off;
            if (do_up && do_down) {
                if (off < half)
                    CHECK(cudaMemcpyAsync(dev[k] + off, ha + host_off, chunk, cudaMemcpyHostToDevice, up[k]));
                else
                    CHECK(cudaMemcpyAsync(hl + host_off, dev[k] + off, chunk, cudaMemcpyDeviceToHost, down[k]));
            } else if (do_up) {
                CHECK(cudaMemcpyAsync(dev[k] + off, ha + host_off, chunk, cudaMemcpyHostToDevice, up[k]));
            } else {
                CHECK(cudaMemcpyAsync(hl + host_off, dev[k] + off, chunk, cudaMemcpyDeviceToHost, down[k]));
            }
        }
    }
    for (size_t k = 0; k < gpus.size(); ++k) {
        CHECK(cudaSetDevice(gpus[k]));
        CHECK(cudaStreamSynchronize(up[k]));
        CHECK(cudaStreamSynchronize(down[k]));
    }
    return share * gpus.size() / secs(t0, Clock::now()) / 1e9;
}

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s GB CHUNK_MB TRIALS\n", argv[0]);
        return 2;
    }
    size_t bytes = size_t(std::atof(argv[1]) * (1ull << 30));
    size_t chunk = size_t(std::atol(argv[2])) << 20;
    int trials = std::atoi(argv[3]);
    if (bytes == 0 || chunk == 0 || trials < 1 || chunk > bytes) {
        std::fprintf(stderr, "bad arguments\n");
        return 2;
    }
    int n = 0;
    CHECK(cudaGetDeviceCount(&n));
    std::vector<int> all;
    for (int g = 0; g < n; ++g) all.push_back(g);
    std::vector<char*> dev(n);
    std::vector<cudaStream_t> up(n), down(n);
    for (int g = 0; g < n; ++g) {
        CHECK(cudaSetDevice(g));
        CHECK(cudaMalloc(&dev[g], bytes));  // room for the whole buffer: GPU 0 alone copies it all
        CHECK(cudaStreamCreateWithFlags(&up[g], cudaStreamNonBlocking));
        CHECK(cudaStreamCreateWithFlags(&down[g], cudaStreamNonBlocking));
    }
    std::printf("gpus=%d bytes=%zu chunk=%zu thp=%s", n, bytes, chunk, "");
    if (FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r")) {
        char line[128] = {0};
        if (std::fgets(line, sizeof line, f)) std::printf("%s", line);
        std::fclose(f);
    } else {
        std::printf("?\n");
    }
    Pair kept{alloc_one("hostalloc", bytes), alloc_one("hostalloc", bytes), "kept"};
    std::memset(kept.a, 1, bytes);
    const char* modes[] = {"hostalloc", "thp", "nothp", "kept"};
    std::vector<int> one{0};
    for (int t = 0; t < trials; ++t) {
        for (int m = 0; m < 4; ++m) {
            std::string mode = modes[(m + t) % 4];
            auto t0 = Clock::now();
            Pair p = kept;
            if (mode != "kept") {
                p.a = alloc_one(mode, bytes);
                p.l = alloc_one(mode, bytes);
                std::memset(p.a, 1, bytes);
            }
            double alloc_s = secs(t0, Clock::now());
            long kb = huge_kb();
            double up_all = copy(all, dev, up, down, p.a, p.l, bytes, chunk, true, false);
            double up_one = copy(one, dev, up, down, p.a, p.l, bytes, chunk, true, false);
            double down_all = copy(all, dev, up, down, p.a, p.l, bytes, chunk, false, true);
            double both_all = copy(all, dev, up, down, p.a, p.l, bytes, chunk, true, true);
            double up_all2 = copy(all, dev, up, down, p.a, p.l, bytes, chunk, true, false);
            std::printf("mode=%s trial=%d alloc_s=%.2f anon_huge_kb=%ld up_all=%.1f up_gpu0=%.1f down_all=%.1f "
                        "both_all=%.1f up_all_again=%.1f\n",
                        mode.c_str(), t, alloc_s, kb, up_all, up_one, down_all, both_all, up_all2);
            std::fflush(stdout);
            if (mode != "kept") {
                free_one(mode, p.a, bytes);
                free_one(mode, p.l, bytes);
            }
        }
    }
    return 0;
}

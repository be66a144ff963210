#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <stdio.h>
static void handler(int sig, siginfo_t* si, void* ctx) {
    (void)ctx;
    char buf[128];
    int n = snprintf(buf, sizeof buf, "\n*** signal %d at address %p, thread %ld\n", sig, si->si_addr, (long)gettid());
    write(2, buf, n);
    void* frames[64];
    int k = backtrace(frames, 64);
    backtrace_symbols_fd(frames, k, 2);
    signal(sig, SIG_DFL);
    raise(sig);
}
__attribute__((constructor)) static void install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, 0);
    sigaction(SIGBUS, &sa, 0);
}

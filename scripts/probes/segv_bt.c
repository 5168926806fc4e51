// LD_PRELOAD: on SIGSEGV print each frame as module+offset (and the nearest exported symbol).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static void on_segv(int sig, siginfo_t *si, void *ctx) {
  void *frames[64];
  int n = backtrace(frames, 64);
  fprintf(stderr, "SEGV at address %p, %d frames\n", si->si_addr, n);
  for (int i = 0; i < n; i++) {
    Dl_info d;
    if (dladdr(frames[i], &d) && d.dli_fname)
      fprintf(stderr, "  #%d %s+0x%lx (%s)\n", i, d.dli_fname,
              (unsigned long)((char *)frames[i] - (char *)d.dli_fbase), d.dli_sname ? d.dli_sname : "?");
    else
      fprintf(stderr, "  #%d %p\n", i, frames[i]);
  }
  fflush(stderr);
  _exit(139);
}
__attribute__((constructor)) static void install(void) {
  struct sigaction sa = {0};
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, NULL);
}

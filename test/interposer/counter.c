/* For the Fortran tests: the interposer's counters, looked up at run time,
 * or -1 when the library is not loaded: calls run through Chorus, and
 * requests it tracks (started and not yet completed by the program). */
#define _GNU_SOURCE
#include <dlfcn.h>

static long long count(const char* name) {
    unsigned long long (*f)(void) = (unsigned long long (*)(void))dlsym(RTLD_DEFAULT, name);
    return f ? (long long)f() : -1;
}

long long interposer_intercepted_calls(void) {
    return count("chorus_mpi_intercepted_calls");
}

long long interposer_tracked_requests(void) {
    return count("chorus_mpi_tracked_requests");
}

/* For the Fortran tests: the interposer's counter of calls run through
 * Chorus, looked up at run time, or -1 when the library is not loaded. */
#define _GNU_SOURCE
#include <dlfcn.h>

long long interposer_intercepted_calls(void) {
    unsigned long long (*count)(void) = (unsigned long long (*)(void))dlsym(RTLD_DEFAULT, "chorus_mpi_intercepted_calls");
    return count ? (long long)count() : -1;
}

// Per-operation latency of the CUDA calls a small device collective makes.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
__global__ void touch(float* p) { p[threadIdx.x] += 1.0f; }
int main(int argc, char** argv) {
    const int n = 2000;
    float *d, *h;
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaMalloc(&d, 1 << 20);
    cudaMallocHost(&h, 1 << 20);
    cudaEvent_t e;
    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    auto time = [&](const char* what, auto fn) {
        for (int i = 0; i < 100; ++i) fn();
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < n; ++i) fn();
        double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
        std::printf("%s %-34s %8.2f us\n", argc > 1 ? argv[1] : "", what, us);
    };
    time("D2H 1KiB async+streamsync", [&] { cudaMemcpyAsync(h, d, 1024, cudaMemcpyDeviceToHost, s); cudaStreamSynchronize(s); });
    time("H2D 1KiB async+streamsync", [&] { cudaMemcpyAsync(d, h, 1024, cudaMemcpyHostToDevice, s); cudaStreamSynchronize(s); });
    time("kernel+streamsync", [&] { touch<<<1, 32, 0, s>>>(d); cudaStreamSynchronize(s); });
    time("kernel+event query spin", [&] { touch<<<1, 32, 0, s>>>(d); cudaEventRecord(e, s); while (cudaEventQuery(e) == cudaErrorNotReady) {} });
    time("D2D 1KiB + event spin", [&] { cudaMemcpyAsync(d + 1024, d, 1024, cudaMemcpyDeviceToDevice, s); cudaEventRecord(e, s); while (cudaEventQuery(e) == cudaErrorNotReady) {} });
    time("cudaPointerGetAttributes", [&] { cudaPointerAttributes a; cudaPointerGetAttributes(&a, d); });
    return 0;
}

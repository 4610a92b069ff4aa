// CUB's own device-wide sum and inclusive scan, called directly, timed with CUDA events.
//
// gpubook/vendor.py builds this with `nvcc -O3 -arch=native` and runs it:
//   vendor_cub list                          one line per CUDA device: index, PCI bus, name
//   vendor_cub sum  N REPEATS DEVICE         cub::DeviceReduce::Sum of N floats
//   vendor_cub scan N REPEATS DEVICE         cub::DeviceScan::InclusiveSum of N floats (out of place)
// and reads back lines "ms <time>" (one per repeat), "rel_error <e>" (against a float64 sum on
// the host), "cub <CUB_VERSION>" and "cudart <CUDART_VERSION>". Every repeat times one call
// between two events, after an untimed call that keeps the GPU busy while the events are queued.
#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(err_));       \
            std::exit(2);                                                                  \
        }                                                                                  \
    } while (0)

static int list_devices() {
    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp prop;
        CHECK(cudaGetDeviceProperties(&prop, i));
        std::printf("device %d %d %s\n", i, prop.pciBusID, prop.name);
    }
    return 0;
}

// A call of CUB's own function: the first call (temp == nullptr) asks for its scratch size.
static void cub_call(bool scan, void *temp, size_t &bytes, const float *in, float *out, int n) {
    if (scan)
        CHECK(cub::DeviceScan::InclusiveSum(temp, bytes, in, out, n));
    else
        CHECK(cub::DeviceReduce::Sum(temp, bytes, in, out, n));
}

int main(int argc, char **argv) {
    if (argc == 2 && std::strcmp(argv[1], "list") == 0) return list_devices();
    if (argc != 5 || (std::strcmp(argv[1], "sum") != 0 && std::strcmp(argv[1], "scan") != 0)) {
        std::fprintf(stderr, "usage: %s list | (sum|scan) N REPEATS DEVICE\n", argv[0]);
        return 1;
    }
    const bool scan = std::strcmp(argv[1], "scan") == 0;
    const long long n_arg = std::atoll(argv[2]);
    const int repeats = std::atoi(argv[3]);
    if (n_arg < 1 || n_arg > 2147483647LL || repeats < 1) {
        std::fprintf(stderr, "N must be 1 to 2^31 - 1 and REPEATS at least 1\n");
        return 1;
    }
    const int n = static_cast<int>(n_arg);
    CHECK(cudaSetDevice(std::atoi(argv[4])));

    // uniform floats in [0, 1) from a fixed 32-bit LCG: the same data on every run
    std::vector<float> host(n);
    unsigned int state = 8u;
    for (int i = 0; i < n; ++i) {
        state = state * 1664525u + 1013904223u;
        host[i] = (state >> 8) * (1.0f / 16777216.0f);
    }
    float *in = nullptr, *out = nullptr;
    CHECK(cudaMalloc(&in, sizeof(float) * n));
    CHECK(cudaMalloc(&out, sizeof(float) * (scan ? n : 1)));
    CHECK(cudaMemcpy(in, host.data(), sizeof(float) * n, cudaMemcpyHostToDevice));
    size_t bytes = 0;
    cub_call(scan, nullptr, bytes, in, out, n);
    void *temp = nullptr;
    CHECK(cudaMalloc(&temp, bytes > 0 ? bytes : 1));

    cub_call(scan, temp, bytes, in, out, n);  // warm-up
    CHECK(cudaDeviceSynchronize());
    cudaEvent_t start, end;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&end));
    for (int r = 0; r < repeats; ++r) {
        cub_call(scan, temp, bytes, in, out, n);  // untimed: keeps the GPU busy
        CHECK(cudaEventRecord(start));
        cub_call(scan, temp, bytes, in, out, n);
        CHECK(cudaEventRecord(end));
        CHECK(cudaEventSynchronize(end));
        float ms = 0.0f;
        CHECK(cudaEventElapsedTime(&ms, start, end));
        std::printf("ms %.6f\n", ms);
    }

    // the result against a float64 sum on the host
    double error = 0.0;
    if (scan) {
        std::vector<float> got(n);
        CHECK(cudaMemcpy(got.data(), out, sizeof(float) * n, cudaMemcpyDeviceToHost));
        double running = 0.0;
        for (int i = 0; i < n; ++i) {
            running += host[i];
            if (running > 0.0) error = std::fmax(error, std::fabs(got[i] - running) / running);
        }
    } else {
        float got = 0.0f;
        CHECK(cudaMemcpy(&got, out, sizeof(float), cudaMemcpyDeviceToHost));
        double total = 0.0;
        for (int i = 0; i < n; ++i) total += host[i];
        error = total > 0.0 ? std::fabs(got - total) / total : std::fabs(got);
    }
    std::printf("rel_error %.3e\n", error);
    std::printf("cub %d\n", CUB_VERSION);
    std::printf("cudart %d\n", CUDART_VERSION);
    CHECK(cudaFree(temp));
    CHECK(cudaFree(out));
    CHECK(cudaFree(in));
    return 0;
}

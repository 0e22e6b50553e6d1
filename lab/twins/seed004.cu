// Seed 004 ("Matrix Multiplication: The Operation Behind Modern AI"): the naive kernel, its
// one-index-swapped variant and the tiled template, re-typed. Arguments: M, N, K.
// The tiled kernel has no bounds checks: launch it only when M, N and K are multiples of T.

extern "C" __global__ void s004_naive(const float* a, const float* b, float* c,
                                      int m, int n, int k_total)
{
    int q = blockIdx.x * blockDim.x + threadIdx.x;   // neighbouring threads: columns
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= m || q >= n) return;
    float total = 0.0f;
    for (int k = 0; k < k_total; ++k)
        total += a[r * k_total + k] * b[k * n + q];
    c[r * n + q] = total;
}

extern "C" __global__ void s004_naive_swapped(const float* a, const float* b, float* c,
                                              int m, int n, int k_total)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;   // neighbouring threads: rows
    int q = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= m || q >= n) return;
    float total = 0.0f;
    for (int k = 0; k < k_total; ++k)
        total += a[r * k_total + k] * b[k * n + q];
    c[r * n + q] = total;
}

template <int T>
__global__ void s004_tiled(const float* a, const float* b, float* c,
                           int m, int n, int k_total)
{
    __shared__ float a_part[T][T];
    __shared__ float b_part[T][T];
    int x = threadIdx.x, y = threadIdx.y;
    int q = blockIdx.x * T + x, r = blockIdx.y * T + y;
    float total = 0.0f;
    for (int k0 = 0; k0 < k_total; k0 += T) {
        a_part[y][x] = a[r * k_total + k0 + x];
        b_part[y][x] = b[(k0 + y) * n + q];
        __syncthreads();
        for (int i = 0; i < T; ++i)
            total += a_part[y][i] * b_part[i][x];
        __syncthreads();
    }
    c[r * n + q] = total;
}

template __global__ void s004_tiled<8>(const float*, const float*, float*, int, int, int);
template __global__ void s004_tiled<16>(const float*, const float*, float*, int, int, int);
template __global__ void s004_tiled<32>(const float*, const float*, float*, int, int, int);

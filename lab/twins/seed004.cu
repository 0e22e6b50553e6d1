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

// Seed 004's register kernel: a 64 x 64 block tile, 16 x 16 threads, a 4 x 4 patch of C per
// thread, a k-slice of 16. The seed prints only the multiply-add loop; the tile loads and the
// barriers around it are ours, written the way the Numba kernel `patch4` does them (each thread
// copies elements tid, tid + 256, ... of each tile, row-major). No bounds checks: launch it only
// when M, N and K are multiples of 64.
extern "C" __global__ void s004_regs4(const float* a, const float* b, float* c,
                                      int m, int n, int k_total)
{
    __shared__ float a_part[64][16];
    __shared__ float b_part[16][64];
    int x = threadIdx.x, y = threadIdx.y;
    int me = y * 16 + x;
    int r0 = blockIdx.y * 64, q0 = blockIdx.x * 64;
    float acc[4][4] = {{0.0f}};
    for (int k0 = 0; k0 < k_total; k0 += 16) {
        for (int l = 0; l < 4; ++l) {
            int e = me + l * 256;
            a_part[e / 16][e % 16] = a[(r0 + e / 16) * k_total + k0 + e % 16];
            b_part[e / 64][e % 64] = b[(k0 + e / 64) * n + q0 + e % 64];
        }
        __syncthreads();
        for (int k = 0; k < 16; ++k) {
            float av[4], bv[4];
            for (int i = 0; i < 4; ++i) {
                av[i] = a_part[y * 4 + i][k];
                bv[i] = b_part[k][x * 4 + i];
            }
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j)
                    acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        __syncthreads();
    }
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            c[(r0 + y * 4 + i) * n + q0 + x * 4 + j] = acc[i][j];
}

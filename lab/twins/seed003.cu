// Seed 003 ("Matrix Multiplication — Naive to Tiled"): its two kernels, re-typed for the
// side-by-side runs. Arguments in the seed's order: M, K, N. Row-major float32.

extern "C" __global__ void s003_naive(const float* a, const float* b, float* c,
                                      int m, int k_total, int n)
{
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    int q = blockIdx.x * blockDim.x + threadIdx.x;   // neighbouring threads: columns
    if (r < m && q < n) {
        float total = 0.0f;
        for (int k = 0; k < k_total; ++k)
            total += a[r * k_total + k] * b[k * n + q];
        c[r * n + q] = total;
    }
}

#define S003_TILE 16

extern "C" __global__ void s003_tiled16(const float* a, const float* b, float* c,
                                        int m, int k_total, int n)
{
    __shared__ float a_part[S003_TILE][S003_TILE];
    __shared__ float b_part[S003_TILE][S003_TILE];
    int x = threadIdx.x;
    int y = threadIdx.y;
    int r = blockIdx.y * S003_TILE + y;
    int q = blockIdx.x * S003_TILE + x;
    float total = 0.0f;
    int steps = (k_total + S003_TILE - 1) / S003_TILE;
    for (int s = 0; s < steps; ++s) {
        int ak = s * S003_TILE + x;                  // zero-filled outside A
        a_part[y][x] = (r < m && ak < k_total) ? a[r * k_total + ak] : 0.0f;
        int bk = s * S003_TILE + y;                  // zero-filled outside B
        b_part[y][x] = (bk < k_total && q < n) ? b[bk * n + q] : 0.0f;
        __syncthreads();
        for (int i = 0; i < S003_TILE; ++i)
            total += a_part[y][i] * b_part[i][x];
        __syncthreads();
    }
    if (r < m && q < n)
        c[r * n + q] = total;
}

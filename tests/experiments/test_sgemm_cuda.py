"""The SGEMM_CUDA peer harness: reading its program's output, and refusing to run without it."""
from lab.experiments import sgemm_cuda

OUTPUT = """Running kernel 10 on device 0.
Max size: 4096
dimensions(m=n=k) 128, alpha: 0.5, beta: 3
Average elapsed time: (0.000010) s, performance: (  419.4) GFLOPS. size: (128).
dimensions(m=n=k) 4096, alpha: 0.5, beta: 3
Average elapsed time: (0.003600) s, performance: (38177.6) GFLOPS. size: (4096).
"""


def test_parse_reads_every_size():
    assert sgemm_cuda.parse(OUTPUT) == [(128, 0.00001, 419.4), (4096, 0.0036, 38177.6)]


def test_rows_put_each_size_against_its_cublas():
    rows = sgemm_cuda.rows_for(10, OUTPUT, "ok", {4096: 50.0})
    big = rows[-1]
    assert big["kernel"] == "sgemm_cuda_10" and big["rung"] == "warp tiling"
    assert abs(big["tflops"] - 2 * 4096 ** 3 / 0.0036 / 1e12) < 1e-9
    assert abs(big["pct_cublas"] - 100 * big["tflops"] / 50.0) < 1e-9
    assert rows[0]["pct_cublas"] is None            # no cuBLAS row at that size


def test_missing_checkout_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("LAB_SGEMM_CUDA", str(tmp_path))     # no sgemm.cu there
    assert "LAB_SGEMM_CUDA" in sgemm_cuda.missing()

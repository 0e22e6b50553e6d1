"""SM clock, power and temperature over time, sampled through NVML while kernels run.

:class:`Sampler` is a context manager: a background thread asks NVML every ``interval_s``
(20 ms by default) for the SM clock (MHz), the board power (W) and the GPU temperature (°C),
and the code inside the ``with`` marks what runs when (:meth:`Sampler.phase`)::

    with clocks.Sampler() as sampler:
        with sampler.phase("tc_fp16"):
            ...                                  # launch for a few seconds
    sampler.samples, sampler.phases, sampler.max_sm_mhz

NVML comes from ``nvidia-ml-py`` (the ``pynvml`` module), imported only when a sampler starts;
:func:`reason` says why there is none. NVML's power reading is itself an average over a
window the driver chooses (on recent GPUs of the order of 100 ms), so samples 20 ms apart are
smoother than the real draw. Reading NVML never changes a clock.

The roof at a clock: the peak of a unit is FLOPs per clock per SM × SMs × clock
(:func:`roof_tflops`); at the sampled clock it is lower than at the boost clock by the same
ratio (:func:`roof_at`).
"""
from __future__ import annotations

import importlib.util
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import numpy as np

#: FLOPs per clock per SM of compute capability 9.0 (Hopper): 128 FP32 lanes × 2 (one FMA);
#: dense FP16/BF16 tensor cores with FP32 accumulation, 4 tensor cores × 512 FMA × 2 — twice
#: the 2048 of compute capability 8.0 (A100: 2048 × 108 SMs × 1410 MHz = 312 TFLOP/s, its
#: datasheet's figure; tests/test_clocks.py checks both).
FLOP_PER_CLOCK_PER_SM = {(9, 0): {"fp32": 256, "tensor_fp16": 4096},
                         (8, 0): {"fp32": 128, "tensor_fp16": 2048}}
#: Default sampling period of :class:`Sampler`.
INTERVAL_S = 0.02


def reason() -> str | None:
    """Why NVML cannot be sampled here (a line), or None."""
    if importlib.util.find_spec("pynvml") is None:
        return "needs NVML through nvidia-ml-py (pip install nvidia-ml-py): pynvml not found"
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
    except Exception as exc:  # noqa: BLE001 - no driver, no GPU: say what NVML said
        return f"NVML cannot start here ({type(exc).__name__}: {exc})"
    return None


@dataclass
class Sample:
    t_s: float          # seconds since the sampler started
    sm_mhz: float
    power_w: float
    temp_c: float
    phase: str          # what ran at that moment ("idle" between phases)


class Sampler:
    """Sample NVML in a background thread while the ``with`` block runs (module docstring).

    ``nvml`` is the NVML module (default: ``pynvml``); tests pass a fake with the same
    functions. ``index`` is the NVML device index.
    """

    def __init__(self, interval_s: float = INTERVAL_S, *, nvml=None, index: int = 0,
                 clock=time.perf_counter):
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s!r}")
        self.interval_s = interval_s
        self.index = index
        self._nvml = nvml
        self._clock = clock
        self.samples: list[Sample] = []
        self.phases: list[dict] = []
        self.max_sm_mhz: float | None = None
        self.power_limit_w: float | None = None
        self.errors = 0
        self._current = "idle"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0

    # ---- NVML
    def _read(self) -> tuple[float, float, float]:
        nv, h = self._nvml, self._handle
        return (float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
                nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
                float(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)))

    def now(self) -> float:
        """Seconds since the sampler started (the clock of every sample and phase)."""
        return self._clock() - self._t0

    def _sample(self, label: str) -> None:
        try:
            sm, watts, temp = self._read()
            self.samples.append(Sample(self.now(), sm, watts, temp, label))
        except Exception:  # noqa: BLE001 - one failed read is a gap, not a crash
            self.errors += 1

    def _loop(self) -> None:
        next_at = self._clock()
        while not self._stop.is_set():
            self._sample(self._current)
            next_at += self.interval_s
            self._stop.wait(max(0.0, next_at - self._clock()))

    def __enter__(self) -> "Sampler":
        if self._nvml is None:
            why = reason()
            if why:
                raise RuntimeError(why)
            import pynvml

            self._nvml = pynvml
        nv = self._nvml
        nv.nvmlInit()
        self._handle = nv.nvmlDeviceGetHandleByIndex(self.index)
        self.max_sm_mhz = float(nv.nvmlDeviceGetMaxClockInfo(self._handle, nv.NVML_CLOCK_SM))
        try:
            self.power_limit_w = nv.nvmlDeviceGetEnforcedPowerLimit(self._handle) / 1000.0
        except Exception:  # noqa: BLE001 - not every board reports one
            self.power_limit_w = None
        self._t0 = self._clock()
        self._thread = threading.Thread(target=self._loop, name="nvml-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._nvml.nvmlShutdown()

    @contextmanager
    def phase(self, label: str):
        """Mark what runs inside the block: its samples carry ``label``; :attr:`phases` gets
        ``{"phase", "start_s", "end_s"}``. A phase shorter than the sampling period may see
        no tick of the background thread; it then gets one sample read as it ends, while its
        last kernels have just run, so every phase has at least one."""
        start = self.now()
        before = len(self.samples)
        self._current = label
        try:
            yield self
        finally:
            if self._thread is not None and not any(
                    s.phase == label for s in self.samples[before:]):
                self._sample(label)
            self._current = "idle"
            self.phases.append({"phase": label, "start_s": start, "end_s": self.now()})

    def rows(self) -> list[dict]:
        """The samples as dicts (results rows)."""
        return [asdict(s) for s in self.samples]


# ----------------------------------------------------------------------------- summaries

def summary(samples, label: str, skip_s: float = 0.0) -> dict:
    """Median / min / max SM clock, mean and max power, max temperature over the samples of
    phase ``label`` (:class:`Sample` objects, or dicts naming the phase as ``phase`` or, in a
    results file, ``kernel``), leaving out its first ``skip_s`` seconds."""
    rows = [s if isinstance(s, dict) else asdict(s) for s in samples]
    mine = [r for r in rows if r.get("phase", r.get("kernel")) == label]
    if not mine:
        raise ValueError(f"no samples in phase {label!r}")
    start = mine[0]["t_s"] + skip_s
    steady = [r for r in mine if r["t_s"] >= start] or mine
    sm = np.array([r["sm_mhz"] for r in steady])
    watts = np.array([r["power_w"] for r in steady])
    return {"samples": len(steady), "sm_mhz_median": float(np.median(sm)),
            "sm_mhz_min": float(sm.min()), "sm_mhz_max": float(sm.max()),
            "power_w_mean": float(watts.mean()), "power_w_max": float(watts.max()),
            "temp_c_max": float(max(r["temp_c"] for r in steady))}


def roof_tflops(unit: str, sms: int, clock_mhz: float, cc: tuple[int, int] = (9, 0)) -> float:
    """Peak TFLOP/s of ``unit`` (``"fp32"`` or ``"tensor_fp16"``) on ``sms`` SMs at
    ``clock_mhz``."""
    try:
        per = FLOP_PER_CLOCK_PER_SM[tuple(cc)][unit]
    except KeyError:
        raise ValueError(f"no FLOP-per-clock figure for {unit!r} on compute capability "
                         f"{cc}; known: {sorted(FLOP_PER_CLOCK_PER_SM)}") from None
    return per * sms * clock_mhz * 1e6 / 1e12


def roof_at(unit: str, sms: int, boost_mhz: float, sampled_mhz: float,
            cc: tuple[int, int] = (9, 0)) -> dict:
    """The roof at the boost clock and at the sampled clock, and what the difference costs."""
    boost = roof_tflops(unit, sms, boost_mhz, cc)
    sampled = roof_tflops(unit, sms, sampled_mhz, cc)
    return {"roof_boost_tflops": boost, "roof_sampled_tflops": sampled,
            "clock_ratio": sampled_mhz / boost_mhz}

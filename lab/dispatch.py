"""The choice ``lab.gemm`` makes (:func:`choose`, explained by ``lab.gemm.explain``): which
kernel runs a product of a given shape, dtype and output type on a GPU of a given capability
and SM count, and which candidates its first call times. Nothing here touches a GPU.

* compute capability 9.0, 16-bit inputs: chapter 7's persistent, warp-specialised ``wgmma``
  kernel with its tile order read from a table (:data:`HOPPER_RUNG`: Hopper rung 18 for a
  16-bit C, written by its epilogue, Hopper rung 19 for an FP32 C) on a tile of the menu
  :data:`TILES` ranked by whole waves (:func:`menu`), on as few blocks as finish in the same
  waves (:func:`balanced_blocks`); the next tiles, and stream-K when the tiles fill less than
  one wave, are its candidates; M <= :data:`SMALL_M` goes to the small-M kernel first;
* 8.x, 16-bit: chapter 5's tuned ``mma.sync`` kernel (``tc_fp16`` / ``tc_bf16``), split-K for
  few-tile shapes (FP16);
* FP32 inputs anywhere, and 16-bit inputs on a GPU without ``mma.sync`` (7.5) or in the
  simulator: the tuned SIMT kernel (``warptile_tuned``, split-K when few tiles), 16-bit inputs
  widened to FP32 first;
* a 16-bit C from a kernel that writes FP32 goes through an FP32 workspace and one narrowing
  kernel.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace


class GemmError(ValueError):
    """Input ``lab.gemm`` refuses, with the operand and the problem."""


#: Oldest compute capability ``lab.gemm`` runs on (the toolkit's; see lab.kernels).
MIN_CC = (7, 5)
#: A shape whose output tiles fill less than this share of the SMs, with K at least
#: :data:`LONG_K` times the tile's k-step, goes to split-K. On the H200 (``suite`` results)
#: the ``wgmma`` kernel stays within a few percent of cuBLAS down to 112 tiles of 128x256,
#: while split-K on ``mma.sync`` reached 0.2-0.6 of it: split only below a quarter of the SMs.
FEW_TILES = 0.25
LONG_K = 8
#: ... and only a skinny product (M or N at most this): a small square stays unsplit.
SKINNY = 256
#: Split factors timed against each other (and the heuristic's) on the first few-tile call.
SPLIT_CANDIDATES = (2, 4, 8, 16)
#: The H200's SM count, assumed when a choice is explained for a capability without a GPU.
SM_DEFAULT = 132
#: M at or below which 16-bit inputs on compute capability 8.0+ go to the small-M kernel
#: (:mod:`lab.kernels.small_m`); ``LAB_GEMM_SMALL_M=0`` in the environment turns it off
#: (the choice falls back to split-K on 128-row tiles), to compare the two. Its partial tiles
#: are added by 16-byte loads from L2 with several slices in flight, on 128- or 64-column
#: tiles (both timed), so the whole decode range M <= 128 goes there; on 9.0 the unsplit
#: wgmma kernel and the stream-K one (16-bit C) are timed beside it.
SMALL_M = 128
SMALL_M_ON = os.environ.get("LAB_GEMM_SMALL_M", "1").strip() not in ("0", "off", "no")


@dataclass(frozen=True)
class Choice:
    """What :func:`explain` says was picked: the kernel (a registered name), how it is run, and why."""
    kernel: str
    m: int
    n: int
    k: int
    dtype: str
    out_dtype: str
    cc: tuple | None
    why: tuple = field(default=())
    splits: int = 1
    bn: int = 0                # tile width of the small-M kernel (0: the kernel's own)
    bm: int = 0                # its tile rows when not the kernel's own (small-M: by M;
                               # wgmma: 128, two consumer warpgroups; 64: one)
    blocks: int = 0            # stream-K's block count when capped (0: one per SM)
    fixup: str = ""            # stream-K's fix-up when not the kernel's own (the finisher's)
    widen: bool = False        # 16-bit inputs widened to FP32 for a SIMT kernel
    narrow: bool = False       # FP32 workspace narrowed to the 16-bit C
    native_out: bool = False   # the kernel writes the 16-bit C itself
    candidates: tuple = ()     # other choices timed against this one on the first call
    tuned: str = ""            # what the first call's timing found

    def __str__(self) -> str:
        how = [self.kernel + (f" (split-K, {self.splits} slices)" if self.splits > 1 else "")
               + (f" ({f'{self.bm}-row, ' if self.bm else ''}{self.bn or RUNG_BN}-column "
                  "tiles)" if self.bn or self.bm else "") + (f" (on {self.blocks} blocks)" if self.blocks else "")
               + (f" (fix-up {self.fixup})" if self.fixup else "")]
        if self.widen:
            how.append(f"inputs widened {self.dtype} -> float32 first")
        if self.narrow:
            how.append(f"float32 result narrowed to {self.out_dtype} after")
        if self.native_out:
            how.append(f"{self.out_dtype} written by the kernel's epilogue")
        if self.candidates:
            how.append(f"{len(self.candidates) + 1} candidates timed on the first call")
        if self.tuned:
            how.append(self.tuned)
        return (f"{self.m}x{self.n}x{self.k} {self.dtype} -> {self.out_dtype}: "
                + "; ".join(how) + "\n  because " + "; ".join(self.why))


#: Hopper, 16-bit inputs: rung 18's kernel (tile table; a 16-bit C written by its epilogue) and
#: rung 19's (the FP32 C's), on a tile of :data:`TILES`.
HOPPER_RUNG = {"f16": "wgmma_table", "f32": "wgmma_handoff_table"}
HOPPER_STREAMK = "wgmma_streamk"
#: The tile menu (rows × columns of C per block; a consumer warpgroup per 64 rows: 128-row tiles
#: have two, 64-row tiles one), each with as many stages as fit beside its staging, and a
#: prior: the share of the 128×256 tile's rate a tile keeps when every SM is busy (a narrower
#: tile reads more A per multiply-add and issues smaller wgmma; one consumer warpgroup has no
#: partner to cover its waits). The heuristic ranks the tiles by waves × tile area / prior; the
#: first call at a shape times the best few (:data:`MENU_TIMED`) and keeps the fastest. The
#: 64-row tiles serve shapes with too few tiles to fill the SMs (512³ is 8 tiles of 128×256,
#: 64 of 64×64).
RUNG_BM, RUNG_BN = 128, 256    # the rungs' own tile (a choice's bm 0, bn 0)
TILES = {(128, 256): 1.0, (128, 192): 0.95, (128, 128): 0.85, (128, 64): 0.65,
         (64, 256): 0.75, (64, 128): 0.7, (64, 64): 0.5}
#: Tiles timed on a first call: the heuristic's two best and the next ones within this factor
#: of its estimate, at most :data:`MENU_TIMED` in all.
MENU_SLACK, MENU_TIMED = 1.3, 3


def _waves(tiles: int, sms: int) -> int:
    return -(-tiles // sms)


def balanced_blocks(tiles: int, sms: int) -> int:
    """Persistent blocks for ``tiles`` tiles on ``sms`` SMs: as few as finish in the same
    number of waves (512 tiles on 132 SMs: 4 waves either way, so 128 blocks of 4 tiles; Hopper
    rung 11's grid of 128 at 4096³ is this rule's answer there)."""
    return -(-tiles // _waves(tiles, sms))


def menu(m: int, n: int, sms: int) -> list[tuple[float, int, int]]:
    """The tiles of :data:`TILES` as ``(estimate, bm, bn)``, best first: waves × tile area /
    prior (arbitrary units: only their order and ratios matter)."""
    out = []
    for (bm, bn), prior in TILES.items():
        tiles = -(-m // bm) * -(-n // bn)
        out.append((_waves(tiles, sms) * bm * bn / prior, bm, bn))
    return sorted(out)


def _hopper_choice(rung: str, m, n, k, dtype, out_dtype, cc, why, sms=0, bn=0, bm=0
                   ) -> Choice:
    """Hopper ``rung`` for this product: its registered name and how C is written (a 16-bit
    rung writes a 16-bit C itself; an FP32 rung asked for a 16-bit C goes through a workspace
    and the narrowing pass); a tile-table rung on ``bm``×``bn`` tiles (0: its own) with the
    balanced block count (:func:`balanced_blocks`) for ``sms`` SMs."""
    name = rung + ("_bf16" if dtype == "bfloat16" else "_fp16")
    wide = out_dtype == "float32"
    native = rung != HOPPER_RUNG["f32"]
    if wide and native:
        raise ValueError(f"{rung} writes a 16-bit C only")
    bn = 0 if bn == RUNG_BN else bn
    bm = 0 if bm == RUNG_BM else bm
    blocks = 0
    if rung in HOPPER_RUNG.values() and sms:
        rows, width = bm or RUNG_BM, bn or RUNG_BN
        blocks = balanced_blocks(-(-m // rows) * -(-n // width), sms)
    return Choice(name, m, n, k, dtype, out_dtype, tuple(cc), tuple(why), bn=bn, bm=bm,
                  blocks=blocks, native_out=native, narrow=not native and not wide)


def _streamk(m, n, k, dtype, out_dtype, cc, sms, why) -> list[Choice]:
    """The stream-K wgmma kernel (atomic fix-up, k-slices shared over every SM) on 128×256
    and 128×128 tiles, for a 16-bit C."""
    if out_dtype == "float32":
        return []
    first = _hopper_choice(HOPPER_STREAMK, m, n, k, dtype, out_dtype, cc, why)
    return [replace(first, fixup="atomic"), replace(first, fixup="atomic", bn=128)]


def hopper_config(kernel: str, blocks: int = 0, fixup: str = "", bn: int = 0, bm: int = 0):
    """The configuration ``lab.gemm`` runs for a Hopper choice: the registered ``kernel``'s on
    ``bm``×``bn`` tiles (with as many stages as fit; a consumer warpgroup per 64 rows) when
    given, capped at ``blocks`` persistent blocks, with stream-K's ``fixup`` when given."""
    from lab.kernels import get_spec

    cfg = get_spec(kernel).config
    if bm and bm != cfg.bm:
        cfg = replace(cfg, consumers=bm // 64)
    if bn or bm:
        cfg = cfg.tile(bm or cfg.bm, bn or cfg.bn)
    if blocks or fixup:
        cfg = replace(cfg, grid=blocks, fixup=fixup or cfg.fixup)
    return cfg.validate()


def variants() -> list:
    """The Hopper configurations ``lab.gemm`` may run that are not registered kernels (each
    FP16 and BF16, one grid each: the grid is the launch's): each output's tile-table kernel
    on every other tile of :data:`TILES`, and stream-K with the atomic fix-up on 128×256 and
    128×128 tiles — for the suite to check."""
    out = []
    for kind in ("fp16", "bf16"):
        for rung in HOPPER_RUNG.values():
            out += [hopper_config(f"{rung}_{kind}", bn=bn, bm=bm) for (bm, bn) in TILES
                    if (bm, bn) != (RUNG_BM, RUNG_BN)]
        streamk = f"{HOPPER_STREAMK}_{kind}"
        out += [hopper_config(streamk, fixup="atomic"),
                hopper_config(streamk, fixup="atomic", bn=128)]
    return out


#: Hopper rung numbers of :data:`HOPPER_RUNG`'s kernels (for :func:`explain`'s reasons).
_RUNG_NUMBER = {"wgmma_table": 18, "wgmma_handoff_table": 19}


def _hopper_rung(out_dtype: str) -> str:
    return HOPPER_RUNG["f32" if out_dtype == "float32" else "f16"]


def _hopper(m, n, k, dtype, out_dtype, cc, sms, why) -> Choice:
    """Compute capability 9.0, 16-bit inputs: the tile-table kernel on the menu's best tile,
    the next best timed beside it on the first call, and stream-K when the tiles fill less
    than one wave."""
    rung = _hopper_rung(out_dtype)
    ranked = menu(m, n, sms)
    best = ranked[0][0]
    timed = [(bm, bn) for i, (est, bm, bn) in enumerate(ranked)
             if i < 2 or est <= MENU_SLACK * best][:MENU_TIMED]
    bm, bn = timed[0]
    tiles = -(-m // bm) * -(-n // bn)
    blocks = balanced_blocks(tiles, sms)
    c16 = ", a 16-bit C from its epilogue" if rung == HOPPER_RUNG["f16"] else ""
    why.append(f"compute capability 9.0 has wgmma and TMA: Hopper rung {_RUNG_NUMBER[rung]}'s "
               f"kernel (persistent, warp-specialised, tile order from a table{c16}); "
               f"{bm}x{bn} tiles: {tiles} tiles in {_waves(tiles, sms)} wave(s) of {blocks} "
               f"blocks on {sms} SMs (the tile menu ranked by waves x tile area / prior)")
    first = _hopper_choice(rung, m, n, k, dtype, out_dtype, cc, why, sms, bn, bm)
    others = [_hopper_choice(rung, m, n, k, dtype, out_dtype, cc, why, sms, w, r)
              for r, w in timed[1:]]
    if tiles < sms:
        others += _streamk(m, n, k, dtype, out_dtype, cc, sms, ("stream-K",))
    if others:
        why.append(", ".join(f"{c.bm or RUNG_BM}x{c.bn or RUNG_BN} tiles" if not c.fixup else
                             f"stream-K on {c.bm or RUNG_BM}x{c.bn or RUNG_BN} tiles"
                             for c in others)
                   + " timed beside it on the first call at this shape (kept on disk)")
    return replace(first, why=tuple(why), candidates=tuple(others))


def choose(m: int, n: int, k: int, dtype: str, out_dtype: str, cc, sms: int) -> Choice:
    """The kernel for M×N×K ``dtype`` -> ``out_dtype`` on capability ``cc`` (None: simulator)
    with ``sms`` SMs, and the reasons."""
    why = []
    if cc is not None and tuple(cc) < MIN_CC:
        raise GemmError(f"this GPU is compute capability {cc[0]}.{cc[1]}; lab.gemm needs "
                        f"{MIN_CC[0]}.{MIN_CC[1]} or newer (CUDA 13 generates no code for "
                        "older GPUs)")
    sixteen = dtype != "float32"
    where = "the CUDA simulator" if cc is None else f"compute capability {cc[0]}.{cc[1]}"

    def few(bm, bn, bk):
        tiles = -(-m // bm) * -(-n // bn)
        return (tiles < FEW_TILES * sms and k >= LONG_K * bk
                and min(m, n) <= SKINNY), tiles

    def tc_tiles():
        return -(-m // 128) * -(-n // 128)

    def splits_for(tiles, bk):
        return int(max(2, min(-(-sms // tiles), 16, k // (4 * bk))))

    if sixteen and cc is not None and tuple(cc) >= (8, 0):
        fp16 = dtype == "float16"
        hopper = tuple(cc) == (9, 0)
        if m <= SMALL_M and SMALL_M_ON:
            return _small_m(m, n, k, dtype, out_dtype, tuple(cc), sms, why)
        if hopper:
            return _hopper(m, n, k, dtype, out_dtype, tuple(cc), sms, why)
        small, tiles = few(128, 128, 64)
        if small and fp16:
            s = splits_for(tc_tiles(), 64)
            why.append(f"{tiles} tiles of 128x128 would fill {tiles}/{sms} SMs and K = {k} "
                       f"is long: split K into {s} slices (mma.sync, FP32 partials reduced)")
            why.append(f"{where} has mma.sync (no wgmma)")
            first = Choice("tc_fp16_splitk", m, n, k, dtype, out_dtype, tuple(cc),
                           tuple(why), splits=s, narrow=out_dtype != "float32")
            others = [replace(first, splits=f) for f in SPLIT_CANDIDATES
                      if f != s and f * 2 * 64 <= k]
            why.append("the split factor is picked by timing the candidates once, on the "
                       "first call at this shape")
            return replace(first, why=tuple(why), candidates=tuple(others))
        name = "tc_fp16" if fp16 else "tc_bf16"
        why.append(f"{where} has mma.sync (no wgmma): chapter 5's tuned kernel")
        if small:
            why.append("few tiles, but split-K here is built for FP16 only")
        return Choice(name, m, n, k, dtype, out_dtype, tuple(cc), tuple(why),
                      narrow=out_dtype != "float32")
    if sixteen:
        why.append(f"{where} has no mma.sync: 16-bit inputs widened to FP32 for the SIMT "
                   "kernel")
    else:
        why.append("FP32 inputs: the tuned SIMT kernel (FP32 FMA, no TF32 rounding)")
    small, tiles = few(64, 128, 8)
    if small:
        s = splits_for(tiles, 8)
        why.append(f"{tiles} tiles of 64x128 would fill {tiles}/{sms} SMs and K = {k} is "
                   f"long: split K into {s} slices")
        return Choice("warptile_tuned_splitk", m, n, k, dtype, out_dtype, cc, tuple(why),
                      splits=s, widen=sixteen, narrow=out_dtype != "float32")
    return Choice("warptile_tuned", m, n, k, dtype, out_dtype, cc, tuple(why), widen=sixteen,
                  narrow=out_dtype != "float32")


def _small_m(m, n, k, dtype, out_dtype, cc, sms, why) -> Choice:
    """M <= SMALL_M: the small-M kernel on 128- and 64-column tiles, each with the split
    factor that fills one wave of the SMs and half of it, timed on the first call; above 64
    rows also 64-row tiles (two tile rows: more, lighter blocks); on 9.0 the unsplit wgmma
    kernel on 128- and 64-column tiles (64 rows, one consumer warpgroup, up to M = 64; 128
    above) and, for a 16-bit C, the stream-K wgmma kernel."""
    from lab.kernels import small_m

    kind = "f16" if dtype == "float16" else "bf16"
    name = "tc_small_m_" + ("fp16" if kind == "f16" else "bf16")
    found = []                           # (tile width, slices, tile rows: 0 = by M)
    rows = (0, 64) if m > 64 else (0,)   # above 64 rows, two 64-row tile rows too
    for bm in rows:
        for bn in small_m.WIDTHS:
            s = small_m.k_slices(k, small_m.splits_for(m, n, k, sms, kind, bn, bm))[1]
            for f in (s, max(1, s // 2)):
                f = small_m.k_slices(k, f)[1]
                if (bn, f, bm) not in found:
                    found.append((bn, f, bm))
    bn, s, _ = found[0]
    cfg = small_m.config_for(m, kind, bn)
    tiles = small_m.tiles(m, n, cfg)
    why.append(f"M = {m} <= {SMALL_M}: reading B ({2 * k * n / 1e6:.1f} MB) bounds the time "
               f"(M FLOP per byte of B, far below the ridge): {cfg.bm}-row tiles (A not "
               f"padded), {tiles} tiles of {cfg.bm}x{cfg.bn} on {sms} SMs, K split into {s} "
               "slices (one wave), the partials added by the last block of each tile in the "
               "same launch")
    if out_dtype != "float32":
        why.append(f"{out_dtype} written by the kernel itself (no narrowing pass)")
    first = Choice(name, m, n, k, dtype, out_dtype, cc, tuple(why), splits=s, bn=bn,
                   native_out=out_dtype != "float32")
    others = [replace(first, splits=f, bn=w, bm=r) for w, f, r in found[1:]]
    wgmma = []
    if tuple(cc) == (9, 0):
        # the unsplit tile-table kernel, on 64-row tiles up to 64 rows: its TMA loads and
        # wgmma stream B near the HBM read rate even with most of its rows empty
        rows = 64 if m <= 64 else RUNG_BM
        wgmma.append(f"the tile-table wgmma kernel ({rows}-row tiles)")
        others += [_hopper_choice(_hopper_rung(out_dtype), m, n, k, dtype, out_dtype, cc,
                                  ("the wgmma kernel, unsplit",), sms, bn, rows)
                   for bn in (128, 64)]
        if out_dtype != "float32":
            wgmma.append("the stream-K wgmma kernel")
            others += _streamk(m, n, k, dtype, out_dtype, cc, sms,
                               ("the wgmma kernel, k-slices shared over the SMs",))
    if others:
        why.append("tiles and split factors " + ", ".join(
            f"{r or cfg.bm}x{w}/{f}" for w, f, r in found)
            + "".join(f" and {w}" for w in wgmma)
            + " timed once, on the first call at this shape")
    if tuple(cc) != (9, 0):
        why.append(f"compute capability {cc[0]}.{cc[1]} has mma.sync (no wgmma): the "
                   "Hopper kernels are not candidates")
    return replace(first, why=tuple(why), candidates=tuple(others))

"""Fast float32 standard normals from a numpy Generator: vectorised Box–Muller.

numpy's ``Generator.standard_normal`` (ziggurat) draws one value per call of a C function pointer: ≈ 7 ns per
float32 normal on this project's 2-core machines, which made the normal draws half of fig3's cost (docs/section6.md,
docs/benchmarks.md). The Box–Muller transform of two uniforms,

    r = √(−2 ln(1 − u₁)),   z₁ = r cos(2πu₂),   z₂ = r sin(2πu₂),

runs as a handful of SIMD passes over cache-sized blocks instead: ≈ 2.6 ns per normal. u₁ is drawn in float64
(53 bits) and 1 − u₁ formed exactly before the float32 logarithm, so the radius reaches √(2·53·ln 2) ≈ 8.6 and the
tails are those of N(0, 1) to far beyond any audit's resolution (a float32 u₁ would cut every |z| at 5.8); u₂ and
the products are float32.

The values differ from ``standard_normal``'s for the same generator (another algorithm), but are a function of
the generator's state and the sizes of the calls: the same seed and the same call sizes give the same normals. ``tests/util/test_normals.py`` checks the law (Kolmogorov–Smirnov, moments, tail frequencies) and the
transform at its edges.
"""

from __future__ import annotations

import numpy as np

#: Normals made per block (two float64 and three float32 scratch arrays of half this length stay in L2).
CHUNK = 1 << 16

_TWO_PI = np.float32(2.0 * np.pi)


def box_muller(u_radius: np.ndarray, u_angle: np.ndarray, out: np.ndarray, radius: np.ndarray | None = None) -> np.ndarray:
    """The Box–Muller transform: 2k standard normals from k radius and k angle uniforms in [0, 1).

    ``out[:k] = r·cos(2πu_angle)`` and ``out[k:2k] = r·sin(2πu_angle)`` with ``r = √(−2 ln(1 − u_radius))``:
    1 − u_radius in float64 (exact), then rounded to float32 (relative error 6·10⁻⁸) for the rest.

    Args:
        u_radius: float64 uniforms in [0, 1), length k (overwritten).
        u_angle: float32 uniforms in [0, 1), length k (overwritten with the angle 2πu).
        out: float32 array of length 2k.
        radius: optional float32 scratch of length k (allocated when not given).

    Returns:
        ``out``.
    """
    k = u_radius.shape[0]
    if u_angle.shape != (k,) or out.shape != (2 * k,):
        raise ValueError(
            f"need k radius and k angle uniforms for 2k outputs, got {u_radius.shape}, {u_angle.shape}, {out.shape}"
        )
    r = np.empty(k, dtype=np.float32) if radius is None else radius
    np.subtract(1.0, u_radius, out=u_radius)  # (0, 1], exact in float64; float32 holds it down to 2⁻⁵³ too
    r[...] = u_radius
    np.log(r, out=r)  # float32 from here on: 8× faster than float64's logarithm here
    np.multiply(r, np.float32(-2.0), out=r)
    np.sqrt(r, out=r)
    np.multiply(u_angle, _TWO_PI, out=u_angle)
    head, tail = out[:k], out[k:]
    np.cos(u_angle, out=head)
    np.sin(u_angle, out=tail)
    np.multiply(head, r, out=head)
    np.multiply(tail, r, out=tail)
    return out


class Normals:
    """A float32 N(0, 1) source over a numpy Generator, with reusable scratch space (see the module).

    Args:
        rng: the generator the uniforms come from.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        half = CHUNK // 2
        self._u_radius = np.empty(half)
        self._u_angle = np.empty(half, dtype=np.float32)
        self._radius = np.empty(half, dtype=np.float32)
        self._pair = np.empty(2, dtype=np.float32)

    def fill(self, out: np.ndarray, scale: float = 1.0) -> np.ndarray:
        """Overwrite the 1-D float32 array ``out`` with ``scale`` × standard normals; returns it."""
        if out.dtype != np.float32 or out.ndim != 1:
            raise ValueError(f"out must be a 1-D float32 array, got {out.dtype} with shape {out.shape}")
        n = out.shape[0]
        for lo in range(0, n, CHUNK):
            part = out[lo : lo + CHUNK]
            k = part.shape[0] // 2
            if k:
                self._block(part[: 2 * k], k)
            if part.shape[0] % 2:  # an odd tail: one more pair, keep its first value
                self._block(self._pair, 1)
                part[-1] = self._pair[0]
        if scale != 1.0:
            np.multiply(out, np.float32(scale), out=out)
        return out

    def _block(self, out: np.ndarray, k: int) -> None:
        u_radius, u_angle = self._u_radius[:k], self._u_angle[:k]
        self.rng.random(k, out=u_radius)
        self.rng.random(k, dtype=np.float32, out=u_angle)
        box_muller(u_radius, u_angle, out, self._radius[:k])

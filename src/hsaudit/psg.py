"""Per-sample gradient backends of DP-SGD populations: ``clipped_sum`` and ``loss`` for ``[models, p]`` parameters.

A backend ("engine") holds one architecture and computes, for a whole population of models at once,

- ``clipped_sum(theta, x, y, clip, weights)``: Σ_x w_x · clip(∇ℓ(θ_m; x), C) for every model m, ``[models, p]``,
  with Opacus' clip factor min(1, C / (‖g‖ + 10⁻⁶)) (``clip=None``: no clipping);
- ``loss(theta, x, y)``: per-sample losses ``[models, n]``.

It knows nothing of DP noise, insertions or adversaries (:mod:`hsaudit.train` runs the DP-SGD loop).

- :class:`MLPPopulation` (FCNN): hand-derived per-sample gradients with batched matmuls; per-sample norms from
  ‖δ ⊗ z‖² = ‖δ‖²‖z‖² without materialising ``[models, batch, p]``.
- :class:`FuncPopulation` (any module): ``torch.func`` — ``vmap`` over models of ``vmap(grad)`` over samples.
"""

from __future__ import annotations

import torch

from hsaudit.models import build_model, fcnn_sizes, loss_name, per_sample_loss

CLIP_EPS = 1e-6  # Opacus' DPOptimizer: clip factor = C / (‖g‖ + 1e-6), capped at 1.
MEMORY_BUDGET = 256 * 2**20  # bytes for per-sample gradient chunks on the CPU


def memory_budget(device: torch.device) -> int:
    """Bytes that per-sample gradient chunks may use: a quarter of the free GPU memory, or 256 MiB on the CPU."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return max(MEMORY_BUDGET, free // 4)
    return MEMORY_BUDGET


class MLPPopulation:
    """Hand-derived per-sample gradients of a ReLU MLP population (the FCNN), parameters ``[models, p]``."""

    def __init__(self, sizes: tuple[int, ...], kind: str) -> None:
        self.sizes, self.kind = sizes, kind
        self.layers: list[tuple[int, int, int, int]] = []  # (offset W, offset b, out, in)
        offset = 0
        for n_in, n_out in zip(sizes[:-1], sizes[1:]):
            self.layers.append((offset, offset + n_out * n_in, n_out, n_in))
            offset += n_out * n_in + n_out
        self.p = offset

    def _unpack(self, theta: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        m = theta.shape[0]
        return [
            (theta[:, ow : ow + o * i].reshape(m, o, i), theta[:, ob : ob + o]) for ow, ob, o, i in self.layers
        ]

    def _forward(self, params, xT: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
        """Feature-major forward pass: inputs of every layer and the logits ``[m, outputs, n]``.

        ``xT`` is the batch transposed, ``[features, n]``; activations are ``[m, width, n]`` so that every
        elementwise op runs along the long, contiguous sample axis, and the first layer, whose input is shared by
        all models, is one GEMM ``[m·width, features] @ [features, n]``.
        """
        m = params[0][0].shape[0]
        w0, b0 = params[0]
        h = torch.addmm(b0.reshape(-1, 1), w0.reshape(-1, w0.shape[-1]), xT).view(m, w0.shape[1], -1)
        zs = [xT]
        for w, b in params[1:]:
            h = h.relu_()  # in place: a pre-activation is not needed again (z > 0 ⇔ a > 0)
            zs.append(h)
            h = torch.baddbmm(b[:, :, None], w, h)
        return zs, h

    def logits(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Logits ``[m, n, outputs]`` of every model on ``x`` ``[n, features]``."""
        return self._forward(self._unpack(theta), x.T.contiguous())[1].transpose(1, 2)

    def loss(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = self.logits(theta, x)  # [M, n, outputs]
        m, n = out.shape[:2]
        return per_sample_loss(self.kind, out.reshape(m * n, -1), y.repeat(m)).reshape(m, n)

    def clipped_sum(
        self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, clip: float | None, weights: torch.Tensor | None
    ) -> torch.Tensor:
        """Σ_x w_x · clip(∇ℓ(θ_m; x), C) for every model m: ``[models, p]``.

        Per-sample gradients of a linear layer are outer products δ ⊗ z (weight) and δ (bias), so the squared
        per-sample norm is Σ_l ‖δ_l‖² (‖z_{l−1}‖² + 1) and the clipped sum is one batched matmul per layer; the
        ``[models, samples, p]`` tensor of per-sample gradients is never built. Models are processed in chunks
        that keep the ``[chunk, width, samples]`` intermediates cache-sized.
        """
        m, n = theta.shape[0], x.shape[0]
        xT = x.T.contiguous()
        chunk = max(1, min(m, (1 << 18) // max(1, n * max(self.sizes))))  # ~1 MB per [chunk, width, n]
        if chunk >= m:
            return self._clipped_sum(theta, xT, y, clip, weights)
        out = torch.empty_like(theta)
        for m0 in range(0, m, chunk):
            w = None if weights is None else weights[m0 : m0 + chunk]
            out[m0 : m0 + chunk] = self._clipped_sum(theta[m0 : m0 + chunk], xT, y, clip, w)
        return out

    def _clipped_sum(self, theta, xT, y, clip, weights) -> torch.Tensor:
        params = self._unpack(theta)
        m = theta.shape[0]
        zs, out = self._forward(params, xT)
        if self.kind == "bce":
            delta = torch.sigmoid(out).sub_(y.to(out.dtype)[None, None, :])
        else:
            delta = torch.softmax(out, dim=1)
            delta.sub_(torch.nn.functional.one_hot(y.long(), out.shape[1]).T.to(out.dtype)[None])
        last = len(params) - 1
        deltas: list[torch.Tensor] = [delta] * len(params)
        sq = None
        for li in range(last, -1, -1):
            deltas[li] = delta
            z = zs[li]
            zsq = (z * z).sum(0 if li == 0 else 1).add_(1.0)  # ‖z‖² + 1 (the bias' input)
            term = (delta * delta).sum(1).mul_(zsq)
            sq = term if sq is None else sq.add_(term)
            if li > 0:  # back through layer li's weights and the ReLU that produced z = zs[li]
                wT = params[li][0].transpose(1, 2)
                back = wT * delta if delta.shape[1] == 1 else torch.bmm(wT, delta)  # outer product for 1 logit
                delta = torch.ops.aten.threshold_backward(back, z, 0)
        if clip is None:
            factor = torch.ones_like(sq) if weights is None else weights.to(sq.dtype)
        else:
            factor = (clip / sq.sqrt_().add_(CLIP_EPS)).clamp_(max=1.0)
            if weights is not None:
                factor = factor.mul_(weights)
        pieces = []
        for li, d in enumerate(deltas):
            sd = d.mul_(factor[:, None, :])
            if li == 0:  # shared input: one GEMM for all models
                pieces.append(torch.mm(sd.reshape(-1, sd.shape[-1]), zs[0].T).view(m, -1))
            else:
                pieces.append(torch.bmm(sd, zs[li].transpose(1, 2)).flatten(1))
            pieces.append(sd.sum(2))
        return torch.cat(pieces, dim=1)


class FuncPopulation:
    """Per-sample gradients of any module via ``torch.func`` (vmap over models of vmap(grad) over samples)."""

    def __init__(self, model: str, model_kwargs: dict, kind: str, device: torch.device) -> None:
        self.module = build_model(model, **model_kwargs).to(device)
        self.kind = kind
        self.spec = [(name, p.shape, p.numel()) for name, p in self.module.named_parameters()]
        self.p = sum(n for _, _, n in self.spec)
        self.buffers = {k: v for k, v in self.module.named_buffers()}

    def _split(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        """Views ``[models, *shape]`` of the flat ``[models, p]`` parameters, one per tensor of the module.

        Splitting outside the differentiated function matters: differentiating through slices of one flat
        vector would make every parameter's backward write a full ``[p]`` gradient (quadratic in the depth).
        """
        out, offset, m = {}, 0, theta.shape[0]
        for name, shape, n in self.spec:
            out[name] = theta[:, offset : offset + n].reshape(m, *shape)
            offset += n
        return out

    def _call(self, params: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(self.module, (params, self.buffers), (x,))

    def _loss_one(self, params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return per_sample_loss(self.kind, self._call(params, x[None]), y[None])[0]

    def loss(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        def one(params):
            return per_sample_loss(self.kind, self._call(params, x), y)

        return torch.func.vmap(one)(self._split(theta))

    def clipped_sum(
        self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, clip: float | None, weights: torch.Tensor | None
    ) -> torch.Tensor:
        m, n = theta.shape[0], x.shape[0]
        psg = torch.func.vmap(
            torch.func.vmap(torch.func.grad(self._loss_one), in_dims=(None, 0, 0)), in_dims=(0, None, None)
        )
        # A [mc, sc, p] chunk of per-sample gradients plus the activations of its backward pass: ~4 copies.
        # Samples first (one model's per-sample gradients is the natural vmap), then models.
        per = max(1, memory_budget(theta.device) // (16 * self.p))
        sc = max(1, min(n, per))
        mc = max(1, min(m, per // sc))
        if mc == 1:  # one model at a time: unbatched weights keep convolutions on their fast path
            single = torch.func.vmap(torch.func.grad(self._loss_one), in_dims=(None, 0, 0))
            psg = lambda params, xs, ys: {  # noqa: E731
                k: v[None] for k, v in single({k: w[0] for k, w in params.items()}, xs, ys).items()
            }
        params = self._split(theta)
        total = torch.zeros_like(theta)
        for m0 in range(0, m, mc):
            chunk = {k: v[m0 : m0 + mc] for k, v in params.items()}
            for s0 in range(0, n, sc):
                grads = psg(chunk, x[s0 : s0 + sc], y[s0 : s0 + sc])  # name -> [mc, sc, *shape]
                flat = [grads[name].flatten(2) for name, _, _ in self.spec]
                if clip is None:
                    factor = torch.ones(flat[0].shape[:2], dtype=theta.dtype, device=theta.device)
                else:
                    norms = torch.stack([g.norm(dim=-1) for g in flat], dim=-1).norm(dim=-1)
                    factor = (clip / (norms + CLIP_EPS)).clamp(max=1.0)
                if weights is not None:
                    factor = factor * weights[m0 : m0 + mc, s0 : s0 + sc]
                total[m0 : m0 + mc] += torch.cat([torch.einsum("ms,msp->mp", factor, g) for g in flat], dim=1)
        return total


def population(model: str, model_kwargs: dict, device: torch.device | str = "cpu", *, backend: str = "auto"):
    """The population engine of a model: ``"mlp"`` (hand-derived, FCNN only) or ``"func"`` (torch.func).

    ``backend="auto"`` picks ``"mlp"`` for the FCNN and ``"func"`` otherwise.
    """
    kind = loss_name(model, **model_kwargs)
    if backend == "auto":
        backend = "mlp" if model == "fcnn" else "func"
    if backend == "mlp":
        if model != "fcnn":
            raise ValueError(f"backend 'mlp' supports only model 'fcnn', got {model!r}")
        return MLPPopulation(fcnn_sizes(model_kwargs.get("variant", "8-3-8-1")), kind)
    if backend == "func":
        return FuncPopulation(model, model_kwargs, kind, torch.device(device))
    raise ValueError(f"backend must be 'auto', 'mlp' or 'func', got {backend!r}")

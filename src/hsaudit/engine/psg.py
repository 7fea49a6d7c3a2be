"""Per-sample gradient backends of DP-SGD populations: clipped sums, norms and losses for ``[models, p]`` parameters.

A backend ("engine") holds one architecture and computes, for a whole population of models at once,

- ``clipped_sum(theta, x, y, clip, weights)``: Σ_x w_x · clip(∇ℓ(θ_m; x), C) for every model m, ``[models, p]``,
  with Opacus' clip factor min(1, C / (‖g‖ + 10⁻⁶)) (``clip=None``: no clipping);
- ``clipped_sum_per_model(theta, x, y, clip, weights, counts)``: the same with a batch of its own per model,
  ``x [models, B, ...]``, ``y``/``weights`` ``[models, B]`` (Poisson subsampling, :mod:`hsaudit.engine.sampling`);
  ``counts`` (optional, host ints): model m's samples are its first ``counts[m]``, the rest is padding of weight 0
  that backends working model by model skip;
- ``grad_norms(theta, x, y)``: the unclipped per-sample gradient norms ‖∇ℓ(θ_m; x)‖, ``[models, n]``;
- ``loss(theta, x, y)``: per-sample losses ``[models, n]``;
- ``p``: the number of parameters (flat order = ``model.parameters()``).

``theta`` may hold a different row per model (per-model θ0). Everything is float32. It knows nothing of DP noise,
insertions or adversaries (:mod:`hsaudit.engine.dpsgd` runs the DP-SGD loop).

- :class:`MLPPopulation` (``"mlp"``; FCNN and ``alexnet_head``): hand-derived per-sample gradients with batched
  matmuls over the whole population; per-sample norms from ‖δ ⊗ z‖² = ‖δ‖²‖z‖² without materialising
  ``[models, batch, p]``.
- :class:`HookPopulation` (``"hooks"``; any stack of Linear, Conv2d and GroupNorm layers: ConvNet, ResNet18-GN):
  model after model (taped in groups that share the first convolution's per-sample gradients), one forward and
  one backward of the summed loss that records every layer's input z and output gradient δ (parameters are not
  differentiated); per-sample norms per layer from (z, δ) — Linear: ‖δ‖²(‖z‖² + 1), Conv2d: per-sample weight
  gradients as a grouped convolution's weight gradient or, where cheaper, the "ghost" norm ⟨δᵀδ, UᵀU⟩ of the
  unfolded input U (Li et al. 2022; Bu et al. 2023), GroupNorm: the per-channel (δ·ẑ, δ) sums — and the clipped
  sum as built per-sample gradients × factors or the ordinary weight gradient of the rescaled δ.
- :class:`FuncPopulation` (``"func"``; any module): ``torch.func`` — ``vmap`` over models of ``vmap(grad)`` over
  samples. Slowest on the CPU; kept as a generic fallback and as the test oracle of the others.

:func:`population_engine` builds one for a :class:`~hsaudit.engine.models.ModelSpec`; ``backend="auto"`` takes the
spec's preferred backend (by model, never by population size): ``mlp`` for the MLPs, ``func`` for the
weight-standardised WideResNet, ``hooks`` for the rest (measured, docs/trainer.md "Per-sample gradients").
"""

from __future__ import annotations

import torch
from torch import nn

from hsaudit.engine.architectures import per_sample_loss
from hsaudit.engine.models import PSG_BACKENDS, ModelSpec, require_spec

CLIP_EPS = 1e-6  # Opacus' DPOptimizer: clip factor = C / (‖g‖ + 1e-6), capped at 1.
MEMORY_BUDGET = 512 * 2**20  # bytes for per-sample gradient chunks on the CPU
BACKENDS = ("auto", *PSG_BACKENDS)
_MODELS_PER_GROUP = 16  # hooks backend: models taped together (their shared first convolution is batched)


def memory_budget(device: torch.device) -> int:
    """Bytes that per-sample gradient chunks may use: a quarter of the free GPU memory, or 512 MiB on the CPU."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return max(MEMORY_BUDGET, free // 4)
    return MEMORY_BUDGET


def _clip_factor(sq: torch.Tensor, clip: float | None, weights: torch.Tensor | None) -> torch.Tensor:
    """w_x · min(1, C / (‖g_x‖ + 10⁻⁶)) from squared norms ``sq`` (any shape; ``clip=None``: w_x)."""
    if clip is None:
        return torch.ones_like(sq) if weights is None else weights.to(sq.dtype).clone()
    factor = (clip / sq.sqrt().add_(CLIP_EPS)).clamp_(max=1.0)
    return factor if weights is None else factor.mul_(weights)


def _sq_norm(g: torch.Tensor) -> torch.Tensor:
    """Squared norms over the last axis, accumulated in float64 (a float32 sum of ResNet18's 11M squares is off
    by ~2e-4 relative), returned in ``g``'s dtype."""
    return torch.linalg.vector_norm(g, dim=-1, dtype=torch.float64).square_().to(g.dtype)


def _feature_major(x: torch.Tensor) -> torch.Tensor:
    """The batch as ``[features, n]``: a copy for narrow inputs (the FCNN's 8 features: the elementwise passes
    then run along the contiguous sample axis), a transposed view for wide ones (``alexnet_head``'s 4096: the
    copy cost more than the GEMMs, which read either layout)."""
    return x.T.contiguous() if x.shape[1] <= 64 else x.T


def _clipped_sum_model_by_model(engine, theta, x, y, clip, weights, counts) -> torch.Tensor:
    """``clipped_sum_per_model`` of a backend that works model after model: each model's exact batch
    (``x[m, :counts[m]]``) through its ``clipped_sum``."""
    total = torch.zeros_like(theta)
    for i in range(theta.shape[0]):
        c = x.shape[1] if counts is None else int(counts[i])
        if c > 0:
            total[i : i + 1] = engine.clipped_sum(theta[i : i + 1], x[i, :c], y[i, :c], clip, weights[i : i + 1, :c])
    return total


class MLPPopulation:
    """Hand-derived per-sample gradients of a ReLU MLP population (FCNN, ``alexnet_head``), ``[models, p]``."""

    # clipped_sum_per_model computes on [models, features, B]: a caller may hand x [models, B, features] as a view of
    # a feature-major tensor (hsaudit.engine.dpsgd.run_poisson does for narrow inputs), copied without a transpose
    feature_major_batches = True

    def __init__(self, spec: ModelSpec) -> None:
        if spec.mlp_sizes is None:
            raise ValueError(f"the 'mlp' backend needs a plain ReLU MLP (a spec with mlp_sizes), got {spec.name!r}")
        sizes = spec.mlp_sizes
        self.sizes, self.kind = sizes, spec.loss
        self.layers: list[tuple[int, int, int, int]] = []  # (offset W, offset b, out, in)
        offset = 0
        for n_in, n_out in zip(sizes[:-1], sizes[1:]):
            self.layers.append((offset, offset + n_out * n_in, n_out, n_in))
            offset += n_out * n_in + n_out
        self.p = offset

    def _unpack(self, theta: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        m = theta.shape[0]
        return [(theta[:, ow : ow + o * i].reshape(m, o, i), theta[:, ob : ob + o]) for ow, ob, o, i in self.layers]

    def _forward(self, params, xT: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
        """Feature-major forward pass: inputs of every layer and the logits ``[m, outputs, n]``.

        ``xT`` is the batch transposed, ``[features, n]``; activations are ``[m, width, n]`` so that every
        elementwise op runs along the long, contiguous sample axis, and the first layer, whose input is shared by
        all models, is one GEMM ``[m·width, features] @ [features, n]``.
        """
        m = params[0][0].shape[0]
        w0, b0 = params[0]
        if xT.dim() == 3:  # a batch of its own per model, [m, features, n]
            h = torch.baddbmm(b0[:, :, None], w0, xT)
        else:
            h = torch.addmm(b0.reshape(-1, 1), w0.reshape(-1, w0.shape[-1]), xT).view(m, w0.shape[1], -1)
        zs = [xT]
        for w, b in params[1:]:
            h = h.relu_()  # in place: a pre-activation is not needed again (z > 0 ⇔ a > 0)
            zs.append(h)
            h = torch.baddbmm(b[:, :, None], w, h)
        return zs, h

    def logits(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Logits ``[m, n, outputs]`` of every model on ``x`` ``[n, features]``."""
        return self._forward(self._unpack(theta), _feature_major(x))[1].transpose(1, 2)

    def loss(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = self.logits(theta, x)  # [M, n, outputs]
        m, n = out.shape[:2]
        return per_sample_loss(self.kind, out.reshape(m * n, -1), y.repeat(m)).reshape(m, n)

    def _chunk(self, m: int, n: int) -> int:
        return max(1, min(m, (1 << 18) // max(1, n * max(self.sizes[1:]))))  # ~1 MB per [chunk, width, n]

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
        xT = _feature_major(x)
        chunk = self._chunk(m, n)
        if chunk >= m:
            return self._clipped_sum(theta, xT, y, clip, weights)
        out = torch.empty_like(theta)
        for m0 in range(0, m, chunk):
            w = None if weights is None else weights[m0 : m0 + chunk]
            out[m0 : m0 + chunk] = self._clipped_sum(theta[m0 : m0 + chunk], xT, y, clip, w)
        return out

    def clipped_sum_per_model(
        self,
        theta: torch.Tensor,
        x: torch.Tensor,
        y: torch.Tensor,
        clip: float | None,
        weights: torch.Tensor,
        counts: list[int] | None = None,
    ) -> torch.Tensor:
        """Σ_x w_{m,x} · clip(∇ℓ(θ_m; x), C) over model m's own batch ``x[m]`` (``[models, B, features]``).

        The padded batch is processed whole (batched matmuls over models, padding weighted 0); ``counts`` is
        not needed.
        """
        del counts
        m, n = theta.shape[0], x.shape[1]
        chunk = self._chunk(m, n)
        out = torch.empty_like(theta)
        for m0 in range(0, m, chunk):
            xs = x[m0 : m0 + chunk].transpose(1, 2)  # [c, features, n]
            xs = xs.contiguous() if x.shape[2] <= 64 else xs  # as _feature_major
            out[m0 : m0 + chunk] = self._clipped_sum(theta[m0 : m0 + chunk], xs, y[m0 : m0 + chunk], clip,
                                                     weights[m0 : m0 + chunk])
        return out

    def grad_norms(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Unclipped per-sample gradient norms ``[models, n]``."""
        m, n = theta.shape[0], x.shape[0]
        xT = _feature_major(x)
        chunk = self._chunk(m, n)
        out = torch.empty((m, n), dtype=theta.dtype, device=theta.device)
        for m0 in range(0, m, chunk):
            out[m0 : m0 + chunk] = self._backprop(self._unpack(theta[m0 : m0 + chunk]), xT, y)[2].sqrt_()
        return out

    def _backprop(self, params, xT, y) -> tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
        """Layer inputs z, output gradients δ ``[m, width, n]`` and squared per-sample norms ``[m, n]``.

        ``xT``: ``[features, n]`` shared by all models with ``y`` ``[n]``, or ``[m, features, n]`` with ``y``
        ``[m, n]`` (a batch per model)."""
        zs, out = self._forward(params, xT)
        per_model = xT.dim() == 3
        if self.kind == "bce":
            target = y.to(out.dtype)
            delta = torch.sigmoid(out).sub_(target[:, None, :] if per_model else target[None, None, :])
        else:
            delta = torch.softmax(out, dim=1)
            onehot = torch.nn.functional.one_hot(y.long(), out.shape[1]).to(out.dtype)
            delta.sub_(onehot.transpose(1, 2) if per_model else onehot.T[None])
        last = len(params) - 1
        deltas: list[torch.Tensor] = [delta] * len(params)
        sq = None
        for li in range(last, -1, -1):
            deltas[li] = delta
            z = zs[li]
            # ‖z‖² + 1 (the bias' input); the input's without a [features, n] temporary (4096-d features)
            zsq = torch.linalg.vector_norm(z, dim=0).square_() if li == 0 and not per_model else (z * z).sum(1)
            zsq = zsq.add_(1.0)
            term = (delta * delta).sum(1).mul_(zsq)
            sq = term if sq is None else sq.add_(term)
            if li > 0:  # back through layer li's weights and the ReLU that produced z = zs[li]
                wT = params[li][0].transpose(1, 2)
                back = wT * delta if delta.shape[1] == 1 else torch.bmm(wT, delta)  # outer product for 1 logit
                delta = torch.ops.aten.threshold_backward(back, z, 0)
        return zs, deltas, sq

    def _clipped_sum(self, theta, xT, y, clip, weights) -> torch.Tensor:
        params = self._unpack(theta)
        m = theta.shape[0]
        zs, deltas, sq = self._backprop(params, xT, y)
        factor = _clip_factor(sq, clip, weights)
        pieces = []
        for li, d in enumerate(deltas):
            sd = d.mul_(factor[:, None, :])
            if li == 0 and zs[0].dim() == 2:  # shared input: one GEMM for all models
                pieces.append(torch.mm(sd.reshape(-1, sd.shape[-1]), zs[0].T).view(m, -1))
            else:
                pieces.append(torch.bmm(sd, zs[li].transpose(1, 2)).flatten(1))
            pieces.append(sd.sum(2))
        return torch.cat(pieces, dim=1)


class _ModuleParams:
    """The flat ``[p]`` ↔ per-tensor view map of a module (flat order = ``model.parameters()``)."""

    def __init__(self, module: nn.Module) -> None:
        self.module = module
        self.spec = [(name, p.shape, p.numel()) for name, p in module.named_parameters()]
        self.p = sum(n for _, _, n in self.spec)
        self.buffers = dict(module.named_buffers())

    def split(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        """Views ``[*leading, *shape]`` of flat parameters ``[*leading, p]``, one per tensor of the module.

        Splitting outside any differentiated function matters: differentiating through slices of one flat
        vector would make every parameter's backward write a full ``[p]`` gradient (quadratic in the depth).
        """
        out, offset, lead = {}, 0, theta.shape[:-1]
        for name, shape, n in self.spec:
            out[name] = theta[..., offset : offset + n].reshape(*lead, *shape)
            offset += n
        return out

    def call(self, params: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(self.module, (params, self.buffers), (x,))


class HookPopulation:
    """Per-sample gradients from per-layer activations and output gradients, one model at a time.

    Supported layers (with parameters): ``nn.Linear`` (2-D input), ``nn.Conv2d`` (zero padding, ``groups=1``) and
    affine ``nn.GroupNorm``; parameter-free modules and functions (ReLU, pooling, residual sums) are free. Each
    parametrised module must run once per forward pass (no weight sharing). Samples are processed in chunks
    bounded by :func:`memory_budget`; results do not depend on the chunking (per-sample maths only).
    """

    def __init__(self, spec: ModelSpec, device: torch.device | str = "cpu") -> None:
        device = torch.device(device)
        module = spec.build().to(device)
        module.requires_grad_(False)  # the backward computes layer-output gradients only, never weight gradients
        self.params = _ModuleParams(module)
        self.kind, self.device, self.p = spec.loss, device, self.params.p
        offsets, offset = {}, 0
        for name, _shape, n in self.params.spec:
            offsets[name] = (offset, n)
            offset += n
        # (module, [(parameter name, flat offset, numel)]) per parametrised module, in module order
        self.layers: list[tuple[nn.Module, dict[str, tuple[int, int]]]] = []
        for mod_name, mod in module.named_modules():
            own = [name for name, _ in mod.named_parameters(recurse=False)]
            if not own:
                continue
            self._check_layer(mod_name, mod)
            prefix = f"{mod_name}." if mod_name else ""
            self.layers.append((mod, {name: offsets[prefix + name] for name in own}))
            mod.register_forward_hook(self._record)
        self._tape: list[tuple[nn.Module, torch.Tensor, torch.Tensor]] | None = None
        self._group_weights: dict[tuple[int, int, int], torch.Tensor] = {}  # shape-only weights of grouped convs
        self._sample_bytes: dict[tuple[int, ...], int] = {}

    @staticmethod
    def _check_layer(name: str, mod: nn.Module) -> None:
        if type(mod) is nn.Conv2d:
            if mod.groups != 1 or mod.padding_mode != "zeros" or isinstance(mod.padding, str):
                raise ValueError(f"hooks backend: Conv2d {name!r} needs groups=1 and numeric zero padding")
        elif type(mod) is nn.GroupNorm:
            if not mod.affine:
                raise ValueError(f"hooks backend: GroupNorm {name!r} has no parameters to train")
        elif isinstance(mod, nn.Conv2d) and type(mod) is not nn.Conv2d:
            # e.g. a weight-standardised convolution: its per-sample gradient is the standardisation's Jacobian
            # applied to the ordinary one, which the taped layer inputs and output gradients do not give.
            raise ValueError(
                f"hooks backend: {type(mod).__name__} {name!r} transforms its weight in forward(); use backend 'func'"
            )
        elif type(mod) is not nn.Linear:
            raise ValueError(f"hooks backend supports Linear, Conv2d and GroupNorm layers, got {type(mod).__name__}")

    def _record(self, mod: nn.Module, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
        if self._tape is None:
            return
        if not output.requires_grad:  # the first layer: nothing upstream requires grad
            output.requires_grad_()
        self._tape.append((mod, inputs[0], output))

    # ---------------------------------------------------------------------------------------------- forward
    def _taped(self, params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor):
        """Forward and backward of Σ_x ℓ(θ; x): the tape [(module, z, output)] and the output gradients δ."""
        self._tape = []
        try:
            with torch.enable_grad():
                losses = per_sample_loss(self.kind, self.params.call(params, x), y)
                tape = self._tape
                deltas = torch.autograd.grad(losses.sum(), [out for _, _, out in tape])
        finally:
            self._tape = None
        if len({id(mod) for mod, _, _ in tape}) != len(tape) or len(tape) != len(self.layers):
            raise ValueError("hooks backend needs every parametrised module to run exactly once per forward pass")
        return [(mod, z.detach(), d) for (mod, z, _), d in zip(tape, deltas)]

    def _per_sample_bytes(self, x: torch.Tensor) -> int:
        """Bytes per sample of one taped forward + backward: ~4 copies of every layer's input and output."""
        key = tuple(x.shape[1:])
        if key not in self._sample_bytes:
            self._tape = []
            try:
                with torch.no_grad():
                    self.params.module(x[:1].to(next(self.params.module.parameters()).dtype))
                sizes = 0
                for mod, z, out in self._tape:
                    sizes += z.numel() + out.numel()
                    if type(mod) is nn.Conv2d and not self._conv_ghost(mod, z, out):  # per-sample gradients
                        sizes += mod.weight.numel() // 4  # (the estimate below counts every tensor 4 times)
            finally:
                self._tape = None
            self._sample_bytes[key] = 4 * x.element_size() * max(1, sizes)
        return self._sample_bytes[key]

    def _sample_chunk(self, x: torch.Tensor) -> int:
        return max(1, min(x.shape[0], memory_budget(self.device) // self._per_sample_bytes(x)))

    # ------------------------------------------------------------------------------------- per-layer pieces
    def _layer_norms(self, mod: nn.Module, z: torch.Tensor, d: torch.Tensor, built: torch.Tensor | None = None):
        """Squared per-sample gradient norm ``[n]`` of one layer's parameters, and its per-sample gradients
        ``{name: [n, numel]}`` where they were built (``None`` where the clipped sum is a rescaled weight gradient).
        ``built``: a Conv2d's per-sample weight gradients ``[n, numel]`` when already computed.
        """
        if type(mod) is nn.Linear:
            if z.dim() != 2:
                raise ValueError(f"hooks backend: Linear input must be [n, features], got {tuple(z.shape)}")
            dsq = (d * d).sum(1)
            sq = dsq * (z * z).sum(1)
            return (sq if mod.bias is None else sq.add_(dsq)), None
        if type(mod) is nn.GroupNorm:
            zhat = nn.functional.group_norm(z, mod.num_groups, eps=mod.eps)
            dims = tuple(range(2, z.dim()))
            pieces = {"weight": (d * zhat).sum(dims), "bias": d.sum(dims)}
            return sum((g * g).sum(1) for g in pieces.values()), pieces
        return self._conv_norms(mod, z, d, built)

    @staticmethod
    def _conv_ghost(mod: nn.Conv2d, z: torch.Tensor, d: torch.Tensor) -> bool:
        """Whether the ghost norm costs fewer multiply-adds than building the per-sample weight gradients."""
        out_ch, length = d.shape[1], d.shape[2] * d.shape[3]
        k = z.shape[1] * mod.kernel_size[0] * mod.kernel_size[1]
        return length * (out_ch + k) < out_ch * k

    def _conv_per_sample(self, mod: nn.Conv2d, z: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        """Per-sample weight gradients ``[n, out·in·kh·kw]`` as the weight gradient of a convolution with one group
        per sample (Rochette et al. 2019). ``d`` may stack the output gradients of several models along the
        channels (``[n, models·out, ...]``, all with input ``z``): then the result is ``[n, models·out·k]``.
        """
        n, out_ch = d.shape[:2]
        key = (id(mod), n, out_ch)
        if key not in self._group_weights:  # only its shape is read: an uninitialised buffer, no copies
            self._group_weights[key] = torch.empty((n * out_ch, *mod.weight.shape[1:]), device=d.device)
        return torch.ops.aten.convolution_backward(
            d.reshape(1, n * out_ch, *d.shape[2:]),
            z.reshape(1, -1, *z.shape[2:]),
            self._group_weights[key],
            None,
            list(mod.stride),
            list(mod.padding),
            list(mod.dilation),
            False,
            [0, 0],
            n,
            [False, True, False],
        )[1].view(n, -1)

    def _conv_norms(self, mod: nn.Conv2d, z: torch.Tensor, d: torch.Tensor, built: torch.Tensor | None):
        """Per-sample norms of a Conv2d: G_x = δ_x U_xᵀ (U = unfolded input, δ ``[out, L]``).

        Either G_x is built (``out × k`` per sample, k = in·kh·kw) by :meth:`_conv_per_sample` (measured 2-3×
        faster than unfold + bmm on the CPU), or its norm is taken as the "ghost" inner product
        ⟨δ_xᵀδ_x, U_xᵀU_x⟩ of two ``L × L`` Gram matrices, whichever costs fewer multiply-adds: ``out·k·L``
        against ``L²·(out + k)``. Ghost norms are chunked to the memory budget.
        """
        n, out_ch = d.shape[:2]
        length = d.shape[2] * d.shape[3]
        k = z.shape[1] * mod.kernel_size[0] * mod.kernel_size[1]
        bias = None if mod.bias is None else d.sum((2, 3))
        if not self._conv_ghost(mod, z, d):
            g = self._conv_per_sample(mod, z, d) if built is None else built
            pieces = {"weight": g}
            if bias is not None:
                pieces["bias"] = bias
            return sum((p * p).sum(1) for p in pieces.values()), pieces
        per_sample = 4 * (k * length + 2 * length * length + out_ch * length)
        chunk = max(1, min(n, memory_budget(self.device) // per_sample))
        sq = torch.empty(n, dtype=d.dtype, device=d.device)
        for s0 in range(0, n, chunk):
            u = nn.functional.unfold(
                z[s0 : s0 + chunk], mod.kernel_size, dilation=mod.dilation, padding=mod.padding, stride=mod.stride
            )  # [c, k, L]
            dd = d[s0 : s0 + chunk].flatten(2)  # [c, out, L]
            gram_d = torch.bmm(dd.transpose(1, 2), dd)
            sq[s0 : s0 + chunk] = (gram_d.mul_(torch.bmm(u.transpose(1, 2), u))).sum((1, 2))
        if bias is not None:
            sq += (bias * bias).sum(1)
        return sq, None

    def _layer_sum(self, mod: nn.Module, z: torch.Tensor, d: torch.Tensor, s: torch.Tensor) -> dict[str, torch.Tensor]:
        """Σ_x s_x ∇_{layer params} ℓ(x) as the layer's weight gradient with δ rescaled per sample."""
        if type(mod) is nn.GroupNorm:  # its per-sample gradients are [n, channels]: built, then one GEMV
            return {name: s @ g for name, g in self._layer_norms(mod, z, d)[1].items()}
        ds = d * s.view(-1, *([1] * (d.dim() - 1)))
        if type(mod) is nn.Linear:
            out = {"weight": ds.T @ z}
        else:
            out = {
                "weight": nn.grad.conv2d_weight(
                    z, mod.weight.shape, ds, stride=mod.stride, padding=mod.padding, dilation=mod.dilation
                )
            }
        if mod.bias is not None:
            out["bias"] = ds.sum(0) if ds.dim() == 2 else ds.sum((0, 2, 3))
        return out

    # ---------------------------------------------------------------------------------------- public calls
    def loss(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty((theta.shape[0], x.shape[0]), dtype=theta.dtype, device=theta.device)
        with torch.no_grad():
            for i in range(theta.shape[0]):
                out[i] = per_sample_loss(self.kind, self.params.call(self.params.split(theta[i]), x), y)
        return out

    def _tapes(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, norms: bool):
        """Yield ``(model, first sample, samples, tape, built)`` for every model and chunk of samples.

        Models are taped in groups (as many as the memory budget holds, at most :data:`_MODELS_PER_GROUP`) so that
        the per-sample gradients of a convolution that reads the batch itself — its input is the same for every
        model — are one grouped convolution for the whole group (``built``: layer index → ``[n, numel]``), not one
        small convolution per model. A model's result does not depend on the grouping beyond float rounding.
        """
        m, n = theta.shape[0], x.shape[0]
        sc = self._sample_chunk(x)
        group = max(1, min(m, _MODELS_PER_GROUP, memory_budget(self.device) // (self._per_sample_bytes(x) * sc)))
        for m0 in range(0, m, group):
            rows = range(m0, min(m, m0 + group))
            for s0 in range(0, n, sc):
                xs, ys = x[s0 : s0 + sc], y[s0 : s0 + sc]
                tapes = [self._taped(self.params.split(theta[i]), xs, ys) for i in rows]
                built: list[dict[int, torch.Tensor]] = [{} for _ in rows]
                for li, (mod, z, d) in enumerate(tapes[0] if norms else ()):
                    shared = z.data_ptr() == xs.data_ptr() and z.shape == xs.shape
                    if type(mod) is nn.Conv2d and shared and not self._conv_ghost(mod, z, d):
                        stacked = torch.cat([tape[li][2] for tape in tapes], dim=1)  # [n, models·out, H, W]
                        g = self._conv_per_sample(mod, xs, stacked).view(xs.shape[0], len(rows), -1)
                        for j in range(len(rows)):
                            built[j][li] = g[:, j]
                for j, tape in enumerate(tapes):
                    yield m0 + j, s0, xs, tape, built[j]

    def grad_norms(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Unclipped per-sample gradient norms ``[models, n]``."""
        out = torch.empty((theta.shape[0], x.shape[0]), dtype=theta.dtype, device=theta.device)
        for i, s0, xs, tape, built in self._tapes(theta, x, y, norms=True):
            sq = sum(self._layer_norms(mod, z, d, built.get(li))[0] for li, (mod, z, d) in enumerate(tape))
            out[i, s0 : s0 + xs.shape[0]] = sq.sqrt_()
        return out

    def clipped_sum(
        self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, clip: float | None, weights: torch.Tensor | None
    ) -> torch.Tensor:
        """Σ_x w_x · clip(∇ℓ(θ_m; x), C) for every model m: ``[models, p]`` (see the class docstring)."""
        total = torch.zeros_like(theta)
        for i, s0, xs, tape, built in self._tapes(theta, x, y, norms=clip is not None):
            w = None if weights is None else weights[i, s0 : s0 + xs.shape[0]]
            if clip is None:  # no norms needed: every layer's sum is a rescaled weight gradient
                norms = [(None, None)] * len(tape)
                sq = torch.zeros(xs.shape[0], dtype=theta.dtype, device=theta.device)
            else:
                norms = [self._layer_norms(mod, z, d, built.get(li)) for li, (mod, z, d) in enumerate(tape)]
                sq = sum(layer_sq for layer_sq, _ in norms)
            factor = _clip_factor(sq, clip, w)
            for (mod, z, d), (_, pieces), (_, names) in zip(tape, norms, self.layers):
                if pieces is None:
                    pieces = self._layer_sum(mod, z, d, factor)
                else:  # per-sample gradients were built for the norms: the weighted sum is one GEMV
                    pieces = {name: factor @ g for name, g in pieces.items()}
                for name, piece in pieces.items():
                    off, numel = names[name]
                    total[i, off : off + numel] += piece.reshape(-1)
        return total

    def clipped_sum_per_model(
        self,
        theta: torch.Tensor,
        x: torch.Tensor,
        y: torch.Tensor,
        clip: float | None,
        weights: torch.Tensor,
        counts: list[int] | None = None,
    ) -> torch.Tensor:
        """:meth:`clipped_sum` with a batch per model ``x [models, B, ...]``, model by model on its first
        ``counts[m]`` samples (the padding is skipped)."""
        return _clipped_sum_model_by_model(self, theta, x, y, clip, weights, counts)


class FuncPopulation:
    """Per-sample gradients of any module via ``torch.func`` (vmap over models of vmap(grad) over samples)."""

    def __init__(self, spec: ModelSpec, device: torch.device | str = "cpu") -> None:
        device = torch.device(device)
        self.params = _ModuleParams(spec.build().to(device))
        self.kind, self.device, self.p = spec.loss, device, self.params.p

    def _loss_one(self, params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return per_sample_loss(self.kind, self.params.call(params, x[None]), y[None])[0]

    def loss(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        def one(params):
            return per_sample_loss(self.kind, self.params.call(params, x), y)

        return torch.func.vmap(one)(self.params.split(theta))

    def _chunks(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor):
        """Yield ``(m0, s0, [mc, sc, p] per-sample gradients)`` chunks bounded by the memory budget.

        A chunk of per-sample gradients plus the activations of its backward pass: ~4 copies. Samples first (one
        model's per-sample gradients is the natural vmap), then models — and on the CPU one model at a time, with
        unbatched weights, because vmapped (batched) convolution weights fall off the fast path and made the
        per-model cost grow with the population.
        """
        m, n = theta.shape[0], x.shape[0]
        per = max(1, memory_budget(theta.device) // (16 * self.p))
        sc = max(1, min(n, per))
        mc = 1 if theta.device.type == "cpu" else max(1, min(m, per // sc))
        single = torch.func.vmap(torch.func.grad(self._loss_one), in_dims=(None, 0, 0))
        batched = torch.func.vmap(single, in_dims=(0, None, None))
        params = self.params.split(theta)
        for m0 in range(0, m, mc):
            for s0 in range(0, n, sc):
                xs, ys = x[s0 : s0 + sc], y[s0 : s0 + sc]
                if mc == 1:  # unbatched weights keep convolutions on their ordinary path
                    grads = single({k: v[m0] for k, v in params.items()}, xs, ys)
                    flat = [grads[name].flatten(1)[None] for name, _, _ in self.params.spec]
                else:
                    grads = batched({k: v[m0 : m0 + mc] for k, v in params.items()}, xs, ys)
                    flat = [grads[name].flatten(2) for name, _, _ in self.params.spec]
                yield m0, s0, torch.cat(flat, dim=2)

    def grad_norms(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Unclipped per-sample gradient norms ``[models, n]``."""
        out = torch.empty((theta.shape[0], x.shape[0]), dtype=theta.dtype, device=theta.device)
        for m0, s0, g in self._chunks(theta, x, y):
            out[m0 : m0 + g.shape[0], s0 : s0 + g.shape[1]] = _sq_norm(g).sqrt_()
        return out

    def clipped_sum(
        self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, clip: float | None, weights: torch.Tensor | None
    ) -> torch.Tensor:
        total = torch.zeros_like(theta)
        for m0, s0, g in self._chunks(theta, x, y):
            mc, sc = g.shape[:2]
            w = None if weights is None else weights[m0 : m0 + mc, s0 : s0 + sc]
            factor = _clip_factor(_sq_norm(g), clip, w)
            total[m0 : m0 + mc] += torch.einsum("ms,msp->mp", factor, g)
        return total

    def clipped_sum_per_model(
        self,
        theta: torch.Tensor,
        x: torch.Tensor,
        y: torch.Tensor,
        clip: float | None,
        weights: torch.Tensor,
        counts: list[int] | None = None,
    ) -> torch.Tensor:
        """:meth:`clipped_sum` with a batch per model ``x [models, B, ...]``, model by model on its first
        ``counts[m]`` samples (the padding is skipped)."""
        return _clipped_sum_model_by_model(self, theta, x, y, clip, weights, counts)


def population_engine(spec: ModelSpec, device: torch.device | str = "cpu", *, backend: str = "auto"):
    """The per-sample-gradient engine of a population of ``spec`` models: ``"mlp"``, ``"hooks"`` or ``"func"``.

    Args:
        spec: the architecture (:func:`hsaudit.engine.models.model_spec`).
        device: where the engine's module lives; ``theta``, ``x``, ``y`` passed to it must be there too.
        backend: ``"auto"`` (the spec's preferred backend on ``device``,
            :meth:`~hsaudit.engine.models.ModelSpec.backend_on`: the measured winner, docs/trainer.md; it depends on
            the model and the device only, never on the population size, so results never change with the shard
            size), or one of the spec's backends.

    Raises:
        ValueError: not a spec, an unknown backend, or one the spec does not allow (e.g. ``"mlp"`` for a ConvNet,
            ``"hooks"`` for the weight-standardised WideResNet).
    """
    spec = require_spec(spec)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "auto":
        backend = spec.backend_on(device)
    if backend not in spec.backends:
        raise ValueError(f"backend {backend!r} cannot differentiate {spec.name!r}; its backends are {spec.backends}")
    if backend == "mlp":
        return MLPPopulation(spec)
    if backend == "hooks":
        return HookPopulation(spec, device)
    return FuncPopulation(spec, device)

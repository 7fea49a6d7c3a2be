"""``hsaudit bound``: the accountant's upper bound ε for DP-SGD with a Gaussian mechanism.

PLD accountant of dp-accounting (add/remove, pessimistic) for T compositions of the Gaussian mechanism with
noise multiplier σ and sampling rate q; for q = 1 also the μ-GDP closed form μ = √T/σ (Cebere et al. §1
"Upper bound": σ = 4, T = 250 → ε = 24.00 at δ = 1e−5).
"""

from __future__ import annotations

import argparse
import json

from hsaudit.accounting.gaussian import DEFAULT_DISCRETIZATION, gaussian_epsilon, gdp_epsilon, gdp_mu


def register(sub) -> None:
    parser = sub.add_parser(
        "bound",
        description=(
            "ε at δ of T compositions of the (Poisson-subsampled) Gaussian mechanism: dp-accounting's PLD "
            "accountant, and for sampling rate 1 the μ-GDP closed form with μ = sqrt(T)/σ."
        ),
    )
    parser.add_argument("--noise-multiplier", type=float, required=True, help="σ (noise std / clipping norm)")
    parser.add_argument(
        "--compositions", type=int, required=True, help="T, number of Gaussian compositions (insertion steps)"
    )
    parser.add_argument("--delta", type=float, default=1e-5, help="δ (default 1e-5)")
    parser.add_argument("--sampling-rate", type=float, default=1.0, help="Poisson sampling rate q (default 1)")
    parser.add_argument(
        "--discretization",
        type=float,
        default=DEFAULT_DISCRETIZATION,
        help=f"PLD discretisation interval (default {DEFAULT_DISCRETIZATION:g})",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def compute(
    *,
    noise_multiplier: float,
    compositions: int,
    delta: float,
    sampling_rate: float = 1.0,
    discretization: float = DEFAULT_DISCRETIZATION,
) -> dict:
    """The values printed by ``hsaudit bound`` (see the module docstring)."""
    eps = gaussian_epsilon(
        noise_multiplier=noise_multiplier,
        compositions=compositions,
        delta=delta,
        sampling_rate=sampling_rate,
        discretization=discretization,
    )
    out = {
        "epsilon": eps,
        "noise_multiplier": float(noise_multiplier),
        "compositions": int(compositions),
        "sampling_rate": float(sampling_rate),
        "delta": float(delta),
        "method": (f"dp_accounting PLD (add/remove, pessimistic, connect-the-dots, discretization {discretization:g})"),
    }
    if sampling_rate == 1.0:
        mu = gdp_mu(noise_multiplier=noise_multiplier, compositions=compositions)
        out["mu"] = mu
        out["epsilon_gdp"] = gdp_epsilon(mu=mu, delta=delta)
    return out


def run(args: argparse.Namespace) -> int:
    out = compute(
        noise_multiplier=args.noise_multiplier,
        compositions=args.compositions,
        delta=args.delta,
        sampling_rate=args.sampling_rate,
        discretization=args.discretization,
    )
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(
        f"Upper bound for {out['compositions']} Gaussian compositions, noise multiplier {out['noise_multiplier']:g}, "
        f"sampling rate {out['sampling_rate']:g}, delta {out['delta']:g}"
    )
    print(f"  epsilon (PLD):         {out['epsilon']:.4f}   [{out['method']}]")
    if "epsilon_gdp" in out:
        print(
            f"  epsilon (mu-GDP):      {out['epsilon_gdp']:.4f}   [closed form, mu = sqrt(T)/sigma = {out['mu']:.6g}]"
        )
    return 0

"""Write the golden parity fixtures ``tests/parity/*.npz`` from the reference PyTorch layers.

A developer tool, not run by CI and not a dependency of the package. It needs a CPU PyTorch
(``pip install torch==2.13.0 numpy scipy`` in a separate venv) and local checkouts of the three
reference repositories::

    git clone https://github.com/AndreasMadsen/stable-nalu /tmp/ref-stable-nalu
    git clone https://github.com/bmistry4/nalm-benchmark /tmp/ref-nalm-benchmark
    git clone https://github.com/bmistry4/nalm-division /tmp/ref-nalm-division
    /tmp/torchenv/bin/python -m tools.make_parity_fixtures --refs /tmp --out tests/parity

(``--cases=nmu_no_clamp,nau_no_clamp`` writes only those files; each case draws the same
numbers either way.) A checkout missing under ``--refs``, an unknown case, or a Python without
PyTorch is refused in one sentence, status 2, before anything is written; each file is written
to a temporary file renamed over the old one, so an interrupted run leaves whole fixtures.

Each repository's ``stable_nalu`` package is imported without its ``__init__`` (which pulls in
datasets and TensorBoard); ``tensorboardX``/``torchvision``/``tensorflow`` are stubbed in
``sys.modules``. Everything runs in float64. For every unit (one file per case) and every
weight set × input set the fixture holds, in nalu_jax's ``[in, out]`` layout: the parameters,
the input ``x``, a cotangent ``dy``, and the reference's output, the gradients of
``sum(y · dy)`` w.r.t. every parameter and ``x``, every regulariser and its parameter
gradients, the sparsity error, and the parameters after one SGD step (lr 0.1) on
``sum(y · dy) + Σ regularisers`` followed by the reference's projection (``optimize``).
``tests/test_units_parity.py`` checks nalu_jax against them.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.machinery
import json
import os
import sys
import types

import numpy as np

try:
    import torch
except ModuleNotFoundError:  # refused in main, after the flags: --help works without it
    torch = None
else:
    torch.set_default_dtype(torch.float64)
# the reference wrappers' base class; never instantiated without PyTorch (main refuses first)
_Module = object if torch is None else torch.nn.Module

IN, OUT, BATCH, LR = 3, 2, 6, 0.1
REPOS = {"sn": "stable-nalu", "nb": "nalm-benchmark", "nd": "nalm-division"}


def _stub(name):
    mod = types.ModuleType(name)
    mod.__spec__ = importlib.machinery.ModuleSpec(name, None)
    mod.SummaryWriter = type("SummaryWriter", (), {})
    sys.modules[name] = mod


def load_layers(root: str, repo: str):
    """``stable_nalu.layer`` of one checkout, imported without ``stable_nalu/__init__``."""
    for k in [k for k in sys.modules if k == "stable_nalu" or k.startswith("stable_nalu.")]:
        del sys.modules[k]
    pkg = types.ModuleType("stable_nalu")
    pkg.__path__ = [os.path.join(root, repo, "stable_nalu")]
    sys.modules["stable_nalu"] = pkg
    # generalized.py imports every layer class (the package __init__ exports only some).
    layer = importlib.import_module("stable_nalu.layer.generalized")
    functional = importlib.import_module("stable_nalu.functional")
    return types.SimpleNamespace(layer=layer, functional=functional)


# ------------------------------------------------------------------ reference wrappers


class LogSpace(_Module):
    """The stable-nalu network's ``--nac-mul normal``: exp(layer(log(|x| + ε)))."""

    def __init__(self, layer, eps=1e-7):
        super().__init__()
        self.layer, self.eps = layer, eps

    def forward(self, x):
        return torch.exp(self.layer(torch.log(torch.abs(x) + self.eps)))

    def regualizer(self):
        return self.layer.regualizer()

    def optimize(self, loss):
        self.layer.optimize(loss)


NB_NPU = dict(npu_Wr_init="xavier-uniform", regualizer_npu_w=0, regualizer_gate=0)
ND_KW = dict(beta_nau=False, nru_div_mode="div", trash_cell=False, nau_noise=False)
CLIP = dict(nac_oob="clip", regualizer_shape="linear", regualizer_z=1)
# The ICLR 2020 ablation's "no W-clamp" (``--oob-mode regualized --regualizer-oob 0``): the
# out-of-bound regulariser ("W-OOB") has weight 0 there, so it is left out of the fixture's
# regularisers (and of its SGD step).
NO_CLAMP = dict(nac_oob="regualized", regualizer_shape="linear", regualizer_z=1)

# name: (repo, build(refs) -> torch module, nalu_jax unit, options, {param: (torch name, T)},
#        {ref reg name: nalu_jax name}, weight family, training, sparsity(ref module) -> float)
T, N = True, False  # transpose the torch parameter ([out, in]) or not ([in, out])


def _sp(f, w):
    return float(f.sparsity_error(w.detach()))


CASES = {
    "nac_add": dict(
        repo="sn",
        build=lambda r: r.layer.NACLayer(IN, OUT, regualizer_z=1),
        params={"w_hat": ("W_hat", T), "m_hat": ("M_hat", T)},
        regs={"z": "z"},
        family="hat",
        sparsity=lambda r, m: _sp(r.functional, r.functional.nac_weight(m.W_hat, m.M_hat)),
    ),
    "nac_mul": dict(
        repo="sn",
        build=lambda r: LogSpace(r.layer.NACLayer(IN, OUT, regualizer_z=1)),
        params={"w_hat": ("layer.W_hat", T), "m_hat": ("layer.M_hat", T)},
        regs={"z": "z"},
        family="hat",
        sparsity=lambda r, m: _sp(
            r.functional, r.functional.nac_weight(m.layer.W_hat, m.layer.M_hat)
        ),
    ),
    "nac_mul_sigma": dict(
        repo="sn",
        build=lambda r: LogSpace(r.layer.PosNACLayer(IN, OUT)),
        params={"w_hat": ("layer.W_hat", T)},
        regs={},
        family="hat",
        sparsity=lambda r, m: _sp(r.functional, torch.sigmoid(m.layer.W_hat)),
    ),
    "nac_mul_nmu": dict(
        repo="sn",
        build=lambda r: LogSpace(r.layer.ReRegualizedLinearPosNACLayer(IN, OUT, **CLIP)),
        params={"w": ("layer.W", T)},
        regs={"W": "sparse", "z": "z"},
        family="nmu",
        sparsity=lambda r, m: _sp(r.functional, m.layer.W),
    ),
    "nalu": dict(
        repo="sn",
        build=lambda r: r.layer.NALULayer(IN, OUT),
        params={"w_hat": ("nac_add.W_hat", T), "m_hat": ("nac_add.M_hat", T), "g": ("G_add", T)},
        regs={},
        family="hat",
        sparsity=lambda r, m: _sp(
            r.functional, r.functional.nac_weight(m.nac_add.W_hat, m.nac_add.M_hat)
        ),
    ),
    "nalu_options": dict(
        repo="sn",
        unit="nalu",
        options=dict(separate_weights=True, two_gates=True, gate_bias=True, gate_regularizer=True),
        build=lambda r: r.layer.NALULayer(
            IN, OUT, nalu_two_nac=True, nalu_two_gate=True, nalu_bias=True, nalu_gate="regualized"
        ),
        params={
            "w_hat": ("nac_add.W_hat", T),
            "m_hat": ("nac_add.M_hat", T),
            "w_hat_m": ("nac_mul.W_hat", T),
            "m_hat_m": ("nac_mul.M_hat", T),
            "g": ("G_add", T),
            "g_mul": ("G_mul", T),
            "g_bias": ("bias_add", N),
            "g_mul_bias": ("bias_mul", N),
        },
        regs={"g": "gate"},
        family="hat",
        sparsity=None,
    ),
    "g_nalu": dict(
        repo="nb",
        build=lambda r: r.layer.NALULayer(
            IN, OUT, nac_weight="golden-ratio", nalu_gate="golden-ratio", nalu_mul="golden-ratio"
        ),
        params={"w_hat": ("nac_add.W_hat", T), "m_hat": ("nac_add.M_hat", T), "g": ("G_add", T)},
        regs={},
        family="hat",
        sparsity=None,
    ),
    "inalu": dict(
        repo="nb",
        build=lambda r: r.layer.INALULayer(IN, OUT),
        params={
            "w_hat_a": ("W_a_hat", N),
            "m_hat_a": ("M_a_hat", N),
            "w_hat_m": ("W_m_hat", N),
            "m_hat_m": ("M_m_hat", N),
            "g": ("g", N),
        },
        regs={"inalu": "inalu"},
        family="inalu",
        sparsity=lambda r, m: (
            0.5
            * (
                _sp(r.functional, torch.tanh(m.W_a_hat) * torch.sigmoid(m.M_a_hat))
                + _sp(r.functional, torch.tanh(m.W_m_hat) * torch.sigmoid(m.M_m_hat))
            )
        ),
    ),
    "nau": dict(
        repo="sn",
        build=lambda r: r.layer.ReRegualizedLinearNACLayer(IN, OUT, **CLIP),
        params={"w": ("W", T)},
        regs={"W": "sparse", "z": "z"},
        family="nau",
        sparsity=lambda r, m: _sp(r.functional, torch.clamp(m.W, -1.0, 1.0)),
    ),
    "nmu": dict(
        repo="sn",
        build=lambda r: r.layer.ReRegualizedLinearMNACLayer(IN, OUT, **CLIP),
        params={"w": ("W", T)},
        regs={"W": "sparse", "z": "z"},
        family="nmu",
        sparsity=lambda r, m: _sp(r.functional, m.W),
    ),
    "nmu_normalized": dict(
        repo="sn",
        unit="nmu",
        options=dict(normalized=True),
        build=lambda r: r.layer.ReRegualizedLinearMNACLayer(IN, OUT, mnac_normalized=True, **CLIP),
        params={"w": ("W", T)},
        regs={"W": "sparse", "z": "z"},
        family="nmu",
        inputs=("positive", "mixed", "near_zero"),  # c = std(x) of a batch; no constant batch
        sparsity=None,
    ),
    "gated_nau_nmu": dict(
        repo="sn",
        build=lambda r: r.layer.ReRegualizedLinearNALULayer(
            IN, OUT, nalu_two_nac=True, nalu_mul="mnac", **CLIP
        ),
        params={"nau.w": ("nac_add.W", T), "nmu.w": ("nac_mul.W", T), "g": ("G_add", T)},
        regs={"W": "sparse", "z": "z"},
        family="gated",
        sparsity=None,
    ),
    "snmu": dict(
        repo="nd",
        build=lambda r: r.layer.ReRegualizedLinearMNACLayer(
            IN, OUT, nmu_noise=True, noise_range=[1, 5], **CLIP, **ND_KW
        ),
        params={"w": ("W", T)},
        regs={"W": "sparse", "z": "z"},
        family="nmu",
        training=True,
        noise=True,
        sparsity=None,
    ),
    "npu": dict(
        repo="nb",
        build=lambda r: r.layer.NPULayer(IN, OUT, npu_clip="wig", **NB_NPU),
        options=dict(project=True),
        params={"w_re": ("W_real", N), "w_im": ("W_im", N), "g": ("g", N)},
        regs={"l1": "l1"},
        family="npu",
        sparsity=None,
    ),
    "real_npu": dict(
        repo="nb",
        build=lambda r: r.layer.RealNPULayer(
            IN, OUT, npu_clip="wg", realnpu_reg_type="W", **NB_NPU
        ),
        options=dict(project=True),
        params={"w_re": ("W_real", N), "g": ("g", N)},
        regs={"l1": "l1"},
        family="npu",
        sparsity=None,
    ),
    "nru": dict(
        repo="nd",
        build=lambda r: r.layer.ReciprocalNMULayer(IN, OUT, **CLIP, **ND_KW),
        params={"w": ("W", T)},
        regs={"W": "sparse", "z": "z"},
        family="nau",
        training=True,
        sparsity=lambda r, m: _sp(r.functional, m.W),
    ),
    "nru_eval": dict(
        repo="nd",
        unit="nru",
        build=lambda r: r.layer.ReciprocalNMULayer(IN, OUT, **CLIP, **ND_KW),
        params={"w": ("W", T)},
        regs={"W": "sparse", "z": "z"},
        family="nau",
        training=False,
        sparsity=None,
    ),
    "nmru": dict(
        repo="nd",
        build=lambda r: r.layer.ConcatReciprocalNMUSignRetrievalLayer(
            IN, OUT, nmu_noise=False, noise_range=[1, 5], **CLIP
        ),
        params={"w": ("W", T)},
        regs={"W": "sparse", "z": "z"},
        family="nmu2",
        training=True,
        sparsity=lambda r, m: _sp(r.functional, m.W),
    ),
    "nmru_eval": dict(
        repo="nd",
        unit="nmru",
        build=lambda r: r.layer.ConcatReciprocalNMUSignRetrievalLayer(
            IN, OUT, nmu_noise=False, noise_range=[1, 5], **CLIP
        ),
        params={"w": ("W", T)},
        regs={"W": "sparse", "z": "z"},
        family="nmu2",
        training=False,
        inputs=("positive", "mixed", "near_zero"),  # 1/0 = inf at evaluation, in both
        sparsity=None,
    ),
}


class TorchBaseline(_Module):
    """Baselines the stable-nalu ``BasicLayer`` lacks, from ``torch.nn.functional``."""

    def __init__(self, activation):
        super().__init__()
        self.W = torch.nn.Parameter(torch.zeros(OUT, IN))
        self.bias = torch.nn.Parameter(torch.zeros(OUT))
        self.alpha = torch.nn.Parameter(torch.tensor(0.25)) if activation == "prelu" else None
        self.activation = activation

    def forward(self, x):
        z = torch.nn.functional.linear(x, self.W, self.bias)
        fn = torch.nn.functional
        if self.activation == "prelu":
            return fn.prelu(z, self.alpha.reshape(1))
        return {"leaky_relu": fn.leaky_relu, "swish": fn.silu, "gelu": fn.gelu}[self.activation](z)

    def optimize(self, loss):
        del loss


BASIC = {  # nalu_jax name: stable-nalu BasicLayer activation
    "linear": "linear",
    "relu": "ReLU",
    "relu6": "ReLU6",
    "tanh": "Tanh",
    "sigmoid": "Sigmoid",
    "softsign": "Softsign",
    "elu": "ELU",
    "selu": "SELU",
}
for _name, _act in BASIC.items():
    CASES[_name] = dict(
        repo="sn",
        build=lambda r, a=_act: r.layer.BasicLayer(IN, OUT, activation=a),
        params={"w": ("W", T), "b": ("bias", N)},
        regs={},
        family="basic",
        sparsity=None,
    )
for _name in ("leaky_relu", "prelu", "swish", "gelu"):
    CASES[_name] = dict(
        repo="sn",
        reference="torch.nn.functional",
        build=lambda r, a=_name: TorchBaseline(a),
        params={
            "w": ("W", T),
            "b": ("bias", N),
            **({"alpha": ("alpha", N)} if _name == "prelu" else {}),
        },
        regs={},
        family="basic",
        sparsity=None,
    )

# Cases added later go last: a case's random draws are seeded by its position in CASES.
CASES["nmu_no_clamp"] = dict(
    repo="sn",
    unit="nmu",
    options=dict(clamp_w=False),
    build=lambda r: r.layer.ReRegualizedLinearMNACLayer(IN, OUT, **NO_CLAMP),
    params={"w": ("W", T)},
    regs={"W": "sparse", "z": "z"},
    family="nmu",
    weight_kinds=("random", "bounds", "outside"),
    sparsity=lambda r, m: _sp(r.functional, torch.clamp(m.W, 0.0, 1.0)),
)
CASES["nau_no_clamp"] = dict(
    repo="sn",
    unit="nau",
    options=dict(clamp_w=False),
    build=lambda r: r.layer.ReRegualizedLinearNACLayer(IN, OUT, **NO_CLAMP),
    params={"w": ("W", T)},
    regs={"W": "sparse", "z": "z"},
    family="nau",
    weight_kinds=("random", "bounds", "outside"),
    sparsity=lambda r, m: _sp(r.functional, torch.clamp(m.W, -1.0, 1.0)),
)

# ------------------------------------------------------------------ weights and inputs


def _pick(rng, values, shape, p_random=0.4, random=None):
    """Entries drawn from ``values`` (exact points), some replaced by ``random(shape)``."""
    out = rng.choice(np.asarray(values, np.float64), size=shape)
    if random is not None:
        mask = rng.random(shape) < p_random
        out = np.where(mask, random(shape), out)
    return out


def _outside(rng, exact, lo, hi, shape):
    """Beyond the range [lo, hi] (one entry below, one above, for sure), inside it, and on
    its exact points: for the units without a projection."""
    rnd = lambda s: rng.uniform(lo - 0.8, hi + 0.8, s)  # noqa: E731
    out = _pick(rng, exact, shape, 0.6, rnd)
    out.flat[0] = rng.uniform(lo - 0.8, lo - 0.05)
    out.flat[-1] = rng.uniform(hi + 0.05, hi + 0.8)
    return out


def weights(family: str, name: str, shape, kind: str, rng):
    """One parameter's values: ``random`` (inside the range), ``discrete`` (0/±1 and such),
    ``bounds`` (on the projection's clamp bounds, mixed with interior values), ``outside``
    (NAU/NMU: beyond the clamp bounds too)."""
    u = lambda lo, hi: lambda s: rng.uniform(lo, hi, s)  # noqa: E731
    if kind == "outside":
        if family == "nau":
            return _outside(rng, (-1.0, 0.0, 1.0), -1.0, 1.0, shape)
        if family == "nmu":
            return _outside(rng, (0.0, 1.0), 0.0, 1.0, shape)
        raise ValueError(f"no 'outside' weights for family {family!r}")
    if family in ("nau",) or (family == "gated" and name == "nau.w"):
        rnd, exact = u(-0.95, 0.95), (-1.0, 0.0, 1.0)
        return rnd(shape) if kind == "random" else _pick(rng, exact, shape, random=rnd)
    if family in ("nmu", "nmu2") or (family == "gated" and name == "nmu.w"):
        rnd, exact = u(0.05, 0.95), (0.0, 1.0)
        return rnd(shape) if kind == "random" else _pick(rng, exact, shape, random=rnd)
    if family == "gated":  # the gate G
        return rng.normal(0.0, 1.0, shape)
    if family == "hat":
        # Ŵ = 0 gives W = 0 exactly (the NAC weight's only exact point).
        rnd = lambda s: rng.normal(0.0, 1.0, s)  # noqa: E731
        return (
            rnd(shape)
            if kind == "random" or name.startswith("g")
            else _pick(rng, (0.0,), shape, 0.5, rnd)
        )
    if family == "inalu":
        rnd = lambda s: rng.normal(0.5, 0.6, s)  # noqa: E731
        if kind == "random" or name in ("w_hat_a", "m_hat_a", "m_hat_m"):
            return rnd(shape)
        return _pick(rng, (0.0,), shape, 0.5, rnd)  # W_m = 0 and ĝ = 0 exactly
    if family == "basic":
        if name == "alpha":
            return np.asarray(rng.uniform(0.05, 0.5))
        rnd = lambda s: rng.normal(0.0, 0.8, s)  # noqa: E731
        # b = 0 with a zero input row puts the activation exactly at z = 0.
        return rnd(shape) if kind == "random" or name == "w" else np.zeros(shape)
    if family == "npu":
        if name == "g":
            rnd = u(0.05, 0.95)
            return rnd(shape) if kind == "random" else _pick(rng, (0.0, 1.0), shape, 0.3, rnd)
        rnd = u(-0.95, 0.95)
        if kind == "random":
            return rnd(shape)
        if name == "w_im" and kind == "discrete":
            return np.zeros(shape)  # where W_im starts
        return _pick(rng, (-1.0, 0.0, 1.0), shape, 0.4, rnd)
    raise ValueError(family)


def inputs(kind: str, shape, rng):
    if kind == "positive":
        return rng.uniform(0.5, 3.0, shape)
    if kind == "mixed":
        return rng.uniform(-2.0, 2.0, shape)
    if kind == "near_zero":
        return rng.choice((-1.0, 1.0), shape) * 10.0 ** rng.uniform(-8, -2, shape)
    if kind == "zeros":
        x = rng.uniform(-2.0, 2.0, shape)
        x[rng.random(shape) < 0.4] = 0.0
        x[0, :] = 0.0
        return x
    raise ValueError(kind)


WEIGHT_KINDS = ("random", "discrete", "bounds")
INPUT_KINDS = ("positive", "mixed", "near_zero", "zeros")

# ------------------------------------------------------------------ one evaluation


def _get(module, dotted):
    for part in dotted.split("."):
        module = getattr(module, part)
    return module


def _reg_total(regs: dict, names: dict):
    total = 0.0
    for ref_name in names:
        v = regs.get(ref_name, 0)
        if torch.is_tensor(v):
            total = total + v
    return total


def run_case(refs, name: str, case: dict, kind_w: str, kind_x: str, rng) -> dict:
    r = refs[case["repo"]]
    module = case["build"](r)
    module.train(case.get("training", False))
    n_in = 2 * IN if case["family"] == "nmu2" else IN
    out = {}
    with torch.no_grad():
        for pname, (tname, transpose) in case["params"].items():
            p = _get(module, tname)
            if p.dim() == 2:
                shape = (n_in, OUT) if transpose else tuple(p.shape)
            else:
                shape = tuple(p.shape)
            v = weights(case["family"], pname, shape, kind_w, rng)
            out[f"param:{pname}"] = v
            p.copy_(torch.from_numpy(v.T.copy() if transpose and p.dim() == 2 else v))
    x_np = inputs(kind_x, (BATCH, IN), rng)
    dy_np = rng.normal(0.0, 1.0, (BATCH, OUT))
    out["x"], out["dy"] = x_np, dy_np
    x = torch.from_numpy(x_np).requires_grad_(True)
    if case.get("noise"):
        # The reference draws the noise from torch's global generator: replay the same draw.
        seed = int(rng.integers(2**31))
        torch.manual_seed(seed)
        out["noise"] = torch.Tensor(x.shape).uniform_(1, 5).numpy()
        torch.manual_seed(seed)
    params = {pn: _get(module, tn) for pn, (tn, _) in case["params"].items()}

    def to_nj(pn, g):
        g = g.detach().numpy()
        return g.T.copy() if case["params"][pn][1] and g.ndim == 2 else g

    y = module(x.clone())
    regs = module.regualizer() if hasattr(module, "regualizer") else {}
    if name in ("npu", "real_npu"):
        l1 = r.functional.regualizer.l1(module.parameters())
        regs = dict(regs, l1=l1)
    out["y"] = y.detach().numpy()
    grads = torch.autograd.grad(
        (y * torch.from_numpy(dy_np)).sum(),
        [x, *params.values()],
        allow_unused=True,
        retain_graph=True,
    )
    out["grad:x"] = grads[0].numpy()
    for pn, g in zip(params, grads[1:], strict=True):
        out[f"grad:{pn}"] = np.zeros_like(out[f"param:{pn}"]) if g is None else to_nj(pn, g)
    for ref_name, nj_name in case["regs"].items():
        v = regs.get(ref_name, 0)
        if not torch.is_tensor(v):
            v = torch.zeros(())
        out[f"reg:{nj_name}"] = v.detach().numpy()
        if v.requires_grad:
            gs = torch.autograd.grad(v, list(params.values()), allow_unused=True, retain_graph=True)
        else:
            gs = [None] * len(params)
        for pn, g in zip(params, gs, strict=True):
            out[f"reggrad:{nj_name}:{pn}"] = (
                np.zeros_like(out[f"param:{pn}"]) if g is None else to_nj(pn, g)
            )
    if case.get("sparsity"):
        out["sparsity"] = np.asarray(case["sparsity"](r, module), np.float64)
    # One SGD step on sum(y·dy) + Σ regularisers, then the reference's projection.
    for m in module.modules():  # forget the R_z inputs stored by the first forward
        for v in vars(m).values():
            if hasattr(v, "stored_inputs"):
                v.reset()
    if case.get("noise"):
        torch.manual_seed(seed)  # the same noise as above
    y = module(x.detach().clone())
    regs = module.regualizer() if hasattr(module, "regualizer") else {}
    if name in ("npu", "real_npu"):
        regs = dict(regs, l1=r.functional.regualizer.l1(module.parameters()))
    loss = (y * torch.from_numpy(dy_np)).sum() + _reg_total(regs, case["regs"])
    loss.backward()
    with torch.no_grad():  # plain SGD (torch.optim.SGD with lr, nothing else)
        for p in params.values():
            if p.grad is not None:
                p -= LR * p.grad
    module.optimize(loss)
    for pn, p in params.items():
        out[f"step:{pn}"] = to_nj(pn, p)
    return out


def checkout(refs: str, repo: str) -> str | None:
    """The checkout of ``repo`` under ``refs`` (``refs/repo`` or ``refs/ref-repo``, the one
    holding a ``stable_nalu`` package), or None."""
    for path in (os.path.join(refs, repo), os.path.join(refs, "ref-" + repo)):
        if os.path.isdir(os.path.join(path, "stable_nalu")):
            return path
    return None


def write_fixture(path: str, flat: np.ndarray, meta: dict) -> None:
    """One fixture file, written whole or not at all: into a temporary file beside ``path``,
    then renamed over it (an interrupted run leaves the previous fixture, not half a file).
    Not ``nalu_jax.reporting.report.atomic_write``: this tool runs in a PyTorch environment
    without jax, and importing ``nalu_jax`` imports jax."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as f:
            np.savez_compressed(f, data=flat, meta=np.asarray(json.dumps(meta)))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--refs", required=True, help="directory holding the three checkouts")
    ap.add_argument("--out", default="tests/parity", help="output directory")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cases", default="", help="comma-separated cases to write (default: all)")
    args = ap.parse_args(argv)
    only = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(only) - set(CASES))
    if unknown:
        ap.error(f"--cases names {unknown}; cases: {sorted(CASES)}")
    needed = {case["repo"] for name, case in CASES.items() if not only or name in only}
    checkouts = {key: checkout(args.refs, repo) for key, repo in REPOS.items() if key in needed}
    for key, path in checkouts.items():
        if path is None:
            ap.error(
                f"--refs {args.refs!r} holds no {REPOS[key]} checkout (a {REPOS[key]} or "
                f"ref-{REPOS[key]} directory with its stable_nalu package); clone it there."
            )
    if torch is None:
        ap.error(
            "PyTorch is not installed in this Python: run the tool with the separate "
            "environment this module's docstring sets up (pip install torch==2.13.0 numpy scipy)."
        )
    for stub in ("tensorboardX", "torchvision", "tensorflow"):
        _stub(stub)
    refs = {
        key: load_layers(os.path.dirname(path), os.path.basename(path))
        for key, path in checkouts.items()
    }
    os.makedirs(args.out, exist_ok=True)
    for i, (name, case) in enumerate(CASES.items()):
        if only and name not in only:
            continue
        rng = np.random.default_rng([args.seed, i])
        arrays = {}
        combos = []
        for kw in case.get("weight_kinds", WEIGHT_KINDS):
            for kx in case.get("inputs", INPUT_KINDS):
                for k, v in run_case(refs, name, case, kw, kx, rng).items():
                    arrays[f"{kw}/{kx}/{k}"] = np.asarray(v, np.float64)
                combos.append(f"{kw}/{kx}")
        meta = dict(
            unit=case.get("unit", name),
            options=case.get("options", {}),
            training=case.get("training", False),
            noise=bool(case.get("noise", False)),
            regs=sorted(case["regs"].values()),
            params=list(case["params"]),
            combos=combos,
            lr=LR,
            reference=case.get("reference", REPOS[case["repo"]]),
            torch=torch.__version__,
        )
        # One flat float64 vector per file (small: an npz member costs ~200 bytes of headers);
        # meta["layout"] maps each "weights/inputs/field" key to its shape and offset.
        layout, offset = {}, 0
        for key, v in arrays.items():
            layout[key] = [list(v.shape), offset]
            offset += v.size
        meta["layout"] = layout
        flat = np.concatenate([v.ravel() for v in arrays.values()])
        write_fixture(os.path.join(args.out, f"{name}.npz"), flat, meta)
        print(f"{name}: {len(combos)} combinations")


if __name__ == "__main__":
    main()

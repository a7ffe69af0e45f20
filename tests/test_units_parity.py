"""Golden parity: every arithmetic unit against the reference PyTorch layers, in float64.

The fixtures ``tests/parity/*.npz`` were written by ``tools/make_parity_fixtures.py`` from
``AndreasMadsen/stable-nalu``, ``bmistry4/nalm-benchmark`` and ``bmistry4/nalm-division``
(see the README to regenerate them). For each weight set (random inside the range, on 0/±1,
on the clamp bounds; for the NAU/NMU without projection, ``clamp_w=False``, also beyond the
bounds) × input set (positive, mixed-sign, near zero, exact zeros) they hold the
reference's output, the gradients w.r.t. parameters and input, the regularisers and their
gradients, the sparsity error and the parameters after one SGD step + projection.

Only deliberate difference: the NRU at an input of exactly 0, where the reference's 0^W is NaN
(W < 0, or its gradient in W) and nalu_jax is finite; there a NaN of the reference is skipped.
x64 is switched on only inside each test (``jax.enable_x64``), never for other tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nalu_jax.units import NMU, UNITS, make_unit

FIXTURES = sorted((Path(__file__).parent / "parity").glob("*.npz"))
RTOL, ATOL = 1e-10, 1e-12
#: units whose reference is NaN where nalu_jax is finite on purpose (documented in the unit)
NAN_IN_REFERENCE_OK = {"nru"}


def _get(module, dotted: str):
    for part in dotted.split("."):
        module = getattr(module, part)
    return module


def _close(actual, expected, what: str, nan_ok: bool, scale=None):
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    if scale is not None:
        # An ill-conditioned sum: compare the error with the size of its terms.
        err = np.abs(actual - expected)
        bound = RTOL * (np.asarray(scale) + np.abs(expected)) + ATOL
        assert np.all(err <= bound), f"{what}: {actual} != {expected} (term size {scale})"
        return
    if nan_ok:
        keep = ~np.isnan(expected)
        actual, expected = actual[keep], expected[keep]
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL, err_msg=what)


def _nmru_input_gradient_terms(unit, x, dy, training):
    """|d/dx via x| + |d/dx via 1/(x + ε)|: the NMRU's input gradient is their sum, which
    cancels (to ~1e-12 of the terms) where the selected x and 1/x nearly cancel, near x = 0."""
    xr = unit._extended(x, training)
    _, vjp = jax.vjp(unit.from_extended, xr)
    (g,) = vjp(dy)
    n = x.shape[-1]
    _, dinv = jax.jvp(lambda x: unit._extended(x, training)[..., n:], (x,), (jnp.ones_like(x),))
    return np.abs(g[..., :n]) + np.abs(g[..., n:] * dinv)


def _unpack(path):
    """The fixture's arrays by ``"weights/inputs/field"`` key, and its metadata."""
    with np.load(path) as npz:
        meta = json.loads(str(npz["meta"]))
        flat = npz["data"]
    arrays = {}
    for key, (shape, offset) in meta["layout"].items():
        arrays[key] = flat[offset : offset + int(np.prod(shape))].reshape(shape)
    return arrays, meta


def _check_combo(data, meta: dict, combo: str) -> None:
    f = lambda k: data[f"{combo}/{k}"]  # noqa: E731
    x, dy = jnp.asarray(f("x")), jnp.asarray(f("dy"))
    unit = make_unit(meta["unit"], x.shape[-1], dy.shape[-1], rngs=nnx.Rngs(0), **meta["options"])
    for name in meta["params"]:
        _get(unit, name)[...] = jnp.asarray(f(f"param:{name}"))
    graphdef, state = nnx.split(unit)
    training = meta["training"]
    noise = jnp.asarray(f("noise")) if meta["noise"] else None
    nan_ok = meta["unit"] in NAN_IN_REFERENCE_OK

    def forward(s, x):
        m = nnx.merge(graphdef, s)
        return m.noised(x, noise) if noise is not None else m(x, training=training)

    def regularizers(s, x):
        m = nnx.merge(graphdef, s)
        # sNMU: R_z of the noised input x ⊙ n (what ``regularizers(x, key=...)`` draws).
        return (
            NMU.regularizers(m, x * noise)
            if noise is not None
            else m.regularizers(x, training=training)
        )

    y, vjp = jax.vjp(forward, state, x)
    grad_state, grad_x = vjp(dy)
    where = f"{meta['unit']} {combo}"
    _close(y, f("y"), f"{where}: output", nan_ok)
    scale = _nmru_input_gradient_terms(unit, x, dy, training) if meta["unit"] == "nmru" else None
    _close(grad_x, f("grad:x"), f"{where}: input gradient", nan_ok, scale)
    grads = nnx.merge(graphdef, grad_state)
    for name in meta["params"]:
        _close(_get(grads, name)[...], f(f"grad:{name}"), f"{where}: d/d{name}", nan_ok)

    regs = regularizers(state, x)
    for reg in meta["regs"]:
        _close(regs[reg], f(f"reg:{reg}"), f"{where}: R_{reg}", nan_ok)
        g = nnx.merge(graphdef, jax.grad(lambda s, r=reg: regularizers(s, x)[r])(state))
        for name in meta["params"]:
            _close(
                _get(g, name)[...], f(f"reggrad:{reg}:{name}"), f"{where}: dR_{reg}/d{name}", nan_ok
            )

    if f"{combo}/sparsity" in data:
        _close(unit.sparsity_error(), f("sparsity"), f"{where}: sparsity error", nan_ok)

    def loss(s):
        total = jnp.sum(forward(s, x) * dy)
        r = regularizers(s, x)
        return total + sum(r[k] for k in meta["regs"])

    g = jax.grad(loss)(state)
    stepped = nnx.merge(graphdef, jax.tree.map(lambda p, d: p - meta["lr"] * d, state, g))
    stepped.project()
    for name in meta["params"]:
        _close(_get(stepped, name)[...], f(f"step:{name}"), f"{where}: SGD step of {name}", nan_ok)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_unit_matches_reference(path):
    data, meta = _unpack(path)
    with jax.enable_x64(True):
        for combo in meta["combos"]:
            _check_combo(data, meta, combo)


def coverage(units=UNITS) -> tuple[list, list]:
    """``(missing, no_reference)``: units that declare a reference (``UnitSpec.reference``) but
    have no fixture, and registered units without a reference (the rest of the battery,
    tests/test_registry.py, still runs on them)."""
    covered = {_unpack(p)[1]["unit"] for p in FIXTURES}
    missing = sorted(n for n in units if units.spec(n).reference and n not in covered)
    no_reference = sorted(n for n in units if not units.spec(n).reference)
    return missing, no_reference


def test_fixtures_cover_every_registered_unit():
    missing, no_reference = coverage()
    assert missing == [], f"units declaring a reference without a fixture: {missing}"
    if no_reference:
        print(f"no reference (parity not checked): {no_reference}")


@pytest.mark.parametrize("name", coverage()[1] or ["(none)"])
def test_units_without_reference_are_listed(name):
    """One skipped entry per registered unit without a reference, saying so (a fixture for
    it would mean the unit should declare ``reference=True``)."""
    if name == "(none)":
        pytest.skip("every registered unit has a reference")
    covered = {_unpack(p)[1]["unit"] for p in FIXTURES}
    assert name not in covered, f"{name} has a fixture: register it with reference=True"
    pytest.skip(f"{name}: no reference (UnitSpec.reference is False); parity not checked")


@pytest.mark.parametrize(("case", "lo", "hi"), [("nmu_no_clamp", 0, 1), ("nau_no_clamp", -1, 1)])
def test_no_clamp_fixtures_hold_weights_beyond_the_bounds(case, lo, hi):
    """The ``clamp_w=False`` fixtures start from weights outside the range, the reference's
    step leaves some there (no projection), and its forward is the clamped W's (numpy)."""
    data, meta = _unpack(Path(__file__).parent / "parity" / f"{case}.npz")
    assert meta["options"] == {"clamp_w": False}
    outside = [c for c in meta["combos"] if c.startswith("outside/")]
    assert len(outside) == 4
    for combo in outside:
        f = lambda k, c=combo: data[f"{c}/{k}"]  # noqa: E731
        w, x = f("param:w"), f("x")
        assert (w < lo).any() and (w > hi).any(), combo
        assert ((f("step:w") < lo) | (f("step:w") > hi)).any(), combo
        wc = np.clip(w, lo, hi)
        y = np.prod(x[:, :, None] * wc + 1 - wc, axis=1) if case.startswith("nmu") else x @ wc
        np.testing.assert_allclose(f("y"), y, rtol=1e-12, err_msg=combo)

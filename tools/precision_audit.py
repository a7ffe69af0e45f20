"""Precision audit: every contraction of the library's programs at the configured precision.

    python -m tools.precision_audit [--matmul_precision=highest] [--only=NAME,...]

Lowers (traces to StableHLO, no compilation) every experiment's training, evaluation and
initialisation programs on smoke configs (``CASES``) and every registered unit's forward and
gradient, and lists each ``dot_general``/``convolution`` whose ``precision`` is below the one
asked for. JAX writes the precision of each operand on the op: ``precision = [HIGHEST,
HIGHEST]`` on a ``dot_general``, ``precision_config = [#stablehlo<precision HIGHEST>, ...]`` on
a ``convolution``; an op without one is at ``DEFAULT``. On NVIDIA GPUs since Ampere a float32
contraction at ``DEFAULT`` runs in TF32, so any such op loses the arithmetic tasks' accuracy.
``tests/test_precision_audit.py`` runs it in CI; ``tools.accelerator_check`` on a device.
Exit status 1 when an op is below the precision asked for.
"""

from __future__ import annotations

import argparse
import re
import sys

#: Precision names by strength (JAX's aliases: float32 = highest, tensorfloat32 = high, ...)
RANK = {"DEFAULT": 0, "HIGH": 1, "HIGHEST": 2}

#: name → (config file argument, ``--config.FIELD=VALUE`` overrides): every experiment's smoke
#: config, plus the code paths a smoke config does not take (the 28×28 CNN's band convolution,
#: the LSTM baselines, NALU's gate, the authors' translation set-up)
CASES = {
    "arithmetic_nmu": ("arithmetic:model=nmu,op=mul,smoke", {}),
    "arithmetic_nalu": ("arithmetic:model=nalu,op=mul,smoke", {}),
    "arithmetic_relu": ("arithmetic:model=relu,op=add,smoke", {}),
    "single_module_npu": ("single_module:model=npu,op=mul,smoke", {}),
    "single_module_inalu": ("single_module:model=inalu,op=div,smoke", {}),
    "recurrent_nau": ("recurrent:model=nau,op=add,smoke", {}),
    "recurrent_lstm": ("recurrent:model=lstm,op=add,smoke", {}),
    "sequential_mnist_sum": ("sequential_mnist:task=sum,model=nau,smoke", {}),
    "sequential_mnist_lstm": ("sequential_mnist:task=sum,model=lstm,smoke", {}),
    "sequential_mnist_28": (
        "sequential_mnist:task=sum,model=nau,smoke",
        {"data.source": "synthetic", "data.synthetic_side": 28},
    ),
    "number_translation": ("number_translation:model=nau,smoke", {}),
    "number_translation_authors": ("number_translation:model=nau,setup=authors,smoke", {}),
    "identity": ("identity:smoke", {}),
    "gridworld": ("gridworld:smoke", {}),
}

_OP = re.compile(r"stablehlo\.(dot_general|dot|convolution)\b")
_PRECISION = re.compile(r"precision(?:_config)? = \[([^\]]*)\]")
_NAME = re.compile(r"\b(DEFAULT|HIGHEST|HIGH)\b")


def contractions(text: str) -> list[tuple[str, str, str]]:
    """``(op, weakest precision, line)`` for every contraction in a StableHLO module's text.
    The weakest of the operands' precisions counts; no precision attribute means DEFAULT."""
    found = []
    for line in text.splitlines():
        op = _OP.search(line)
        if not op:
            continue
        attr = _PRECISION.search(line)
        names = _NAME.findall(attr.group(1)) if attr else []
        weakest = min(names, key=RANK.__getitem__) if names else "DEFAULT"
        found.append((op.group(1), weakest, line.strip()))
    return found


def below(text: str, precision: str = "highest") -> list[str]:
    """The lines of ``text``'s contractions weaker than ``precision`` (a ``MATMUL_PRECISIONS``
    name)."""
    import jax

    want = RANK[jax.lax.Precision(precision).name]
    return [line for _, p, line in contractions(text) if RANK[p] < want]


def experiment_programs(name: str, matmul_precision: str = "highest", seeds: int = 2) -> dict:
    """``{"CASE/LABEL/train" | ".../evaluate" | ".../init": StableHLO text}`` of one ``CASES``
    entry: each program of its experiment lowered for ``seeds`` seeds, at ``matmul_precision``
    as ``nalu_jax.engine.run`` sets it."""
    import jax

    from nalu_jax.config import apply_precision, load_config
    from nalu_jax.engine import sweep
    from nalu_jax.engine.loop import blocked
    from nalu_jax.engine.train import seed_keys
    from nalu_jax.experiments import experiment_of
    from nalu_jax.units.precision import use_matmul_precision

    arg, overrides = CASES[name]
    config = load_config(*arg.split(":", 1))
    for field, value in overrides.items():
        section, _, key = field.rpartition(".")
        (config[section] if section else config)[key] = value
    config.matmul_precision = matmul_precision
    experiment = experiment_of(config)
    texts = {}
    with use_matmul_precision(matmul_precision):
        experiment.validate(config)
        apply_precision(config)
        settings = sweep.expand(config, experiment.sweepable)
        for label, cfg in experiment.programs(config):
            pop = experiment.population(cfg, settings)
            trainer, hp = pop.trainer, pop.hparams[0]
            keys = seed_keys(0, range(seeds))
            init = jax.jit(jax.vmap(trainer.init))
            states = jax.eval_shape(init, keys)
            where = f"{name}/{label or 'main'}"
            texts[f"{where}/init"] = init.lower(keys).as_text()
            for part, fn, data in (
                ("train", trainer.train, trainer.train_data),
                ("evaluate", trainer.evaluate, trainer.eval_data),
            ):
                program = jax.jit(blocked(fn, seeds, (0, None, None)))
                texts[f"{where}/{part}"] = program.lower(states, hp, data).as_text()
    return texts


def unit_programs(name: str, matmul_precision: str = "highest") -> dict:
    """``{"unit NAME/forward" | ".../gradient": StableHLO text}``: a registered unit's evaluation
    and training forward, and the gradient of its training loss in parameters and input."""
    import jax
    import jax.numpy as jnp
    from flax import nnx

    from nalu_jax.units import UNITS
    from nalu_jax.units.precision import use_matmul_precision

    with use_matmul_precision(matmul_precision):
        unit = UNITS[name](3, 2, rngs=nnx.Rngs(0))
        graphdef, params, rest = nnx.split(unit, nnx.Param, ...)
        x, key = jnp.ones((4, 3), jnp.float32), jax.random.key(1)

        def forward(params, x):
            return nnx.merge(graphdef, params, rest)(x)

        def loss(params, x):
            y = nnx.merge(graphdef, params, rest)(x, training=True, key=key)
            return jnp.mean(y**2)

        return {
            f"unit {name}/forward": jax.jit(forward).lower(params, x).as_text(),
            f"unit {name}/gradient": jax.jit(jax.grad(loss, (0, 1))).lower(params, x).as_text(),
        }


def audit(names, matmul_precision: str = "highest", units: bool = True) -> dict:
    """``{program: (number of contractions, [lines below matmul_precision])}`` over the
    ``CASES`` in ``names`` and, with ``units``, every registered unit."""
    from nalu_jax.units import UNITS

    texts = {}
    for name in names:
        texts.update(experiment_programs(name, matmul_precision))
    for unit in sorted(UNITS) if units else ():
        texts.update(unit_programs(unit, matmul_precision))
    return {k: (len(contractions(t)), below(t, matmul_precision)) for k, t in texts.items()}


def main(argv=None) -> int:
    from nalu_jax.config import MATMUL_PRECISIONS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matmul_precision", default="highest", choices=MATMUL_PRECISIONS)
    parser.add_argument("--only", default="", help="CASES names, comma-separated")
    opts = parser.parse_args(argv)
    names = opts.only.split(",") if opts.only else list(CASES)
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        parser.error(f"--only: unknown cases {unknown}; known: {sorted(CASES)}")
    found = audit(names, opts.matmul_precision, units=not opts.only)
    total = sum(n for n, _ in found.values())
    weak = [(k, line) for k, (_, lines) in found.items() for line in lines]
    for program, line in weak:
        print(f"{program}: {line}")
    print(
        f"{len(weak)} of {total} contractions in {len(found)} programs below "
        f"{opts.matmul_precision}"
    )
    return 1 if weak else 0


if __name__ == "__main__":
    sys.exit(main())

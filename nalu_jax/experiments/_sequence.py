"""Pieces the two sequence experiments (sequential MNIST, number translation) share."""

from __future__ import annotations

import jax

from nalu_jax.config import ConfigError
from nalu_jax.engine import train
from nalu_jax.engine.run import Population
from nalu_jax.models.arithmetic import MODELS
from nalu_jax.reporting import report
from nalu_jax.units import UNITS, training_needs

#: traced hyperparameters the sequence experiments can sweep in one program
SWEEPABLE = (
    "lr",
    "reg_scale",
    "reg_start",
    "reg_end",
    "lambda_z",
    "npu_beta_start",
    "npu_beta_end",
)


def default_reg_scale(unit: str) -> float:
    """λ̂ of a cell's unit when ``train.reg_scale`` is None: the unit's value in the model table
    of the model table (NAU 0.01), else 10 (NMU and the other regularised units)."""
    spec = MODELS.get(unit)
    if spec is None and unit in UNITS:  # a unit registered without an arithmetic-task model
        declared = UNITS.spec(unit).single_module_reg_scale
        if not isinstance(declared, int | float) or isinstance(declared, bool):
            raise ConfigError(
                f"model.name {unit!r} declares no λ̂ (one single_module_reg_scale value or an "
                "ArithmeticModel); set it on the unit or pass train.reg_scale."
            )
        return float(declared)
    return spec.reg_scale if spec is not None and spec.reg_scale else 10.0


def hparams(config) -> train.HParams:
    """``config.train`` (lr, λ ramp, β set by the sequence configs) with λ̂ by the cell unit."""
    unit = config.model.name
    scale = 0.0 if config.train.get("reg_scale") is not None else default_reg_scale(unit)
    return train.build_hparams(config.train, training_needs([unit]), reg_scale=scale)


def batch_loss(model_loss):
    """A ``Recipe.loss`` from ``model_loss(model, data_key, noise_key, data) -> (mse, regs)``:
    the step key split into data and noise keys, and the shared regularised loss. R_z stays
    in the loss even when λ_z is 0: the sequence models always carried it, and dropping it
    changes how XLA compiles the gradient (last bits of the results)."""

    def loss(model, hp, state, key, data):
        data_key, noise_key = jax.random.split(key)
        mse, regs = model_loss(model, data_key, noise_key, data)
        return train.regularized_loss(mse, regs, hp, state.step, with_z=True), mse

    return loss


def trainer_for(config, factory, model_loss, eval_metrics, *, train_data, eval_data,
                 unit=None) -> train.Trainer:  # fmt: skip
    """A sequence experiment's ``Trainer``: ``batch_loss(model_loss)``, its evaluation, the
    hyperparameters of ``config`` (λ̂ by ``config.model.name``) and the needs of ``unit``
    (default: ``config.model.name``)."""
    recipe = train.Recipe(
        factory=factory,
        loss=batch_loss(model_loss),
        evaluate=eval_metrics,
        train_data=train_data,
        eval_data=eval_data,
    )
    needs = training_needs([unit or config.model.name])
    return train.make_train(recipe, config, hparams(config), needs)


def population(trainer, settings, **fields) -> Population:
    """One program (``trainer``) and each setting's hyperparameters."""
    return Population(
        trainer, [hparams(s.config) for s in settings], [{} for _ in settings], **fields
    )


def run_fields(config, seeds, merged) -> dict:
    """The run-level summary fields every sequence experiment reports (model, seeds, steps,
    divergence, timing); experiments add their own judgement on top."""
    return {
        "model": config.model.name,
        "num_seeds": len(seeds),
        "first_seed": int(config.first_seed),
        "root_seed": int(config.seed),
        "num_steps": int(config.num_steps),
        "diverged": int(merged["diverged"].sum()),
        **report.timing(merged),
    }

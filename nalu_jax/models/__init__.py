"""Networks built from units.

* ``arithmetic``: ``ArithmeticNetwork``, ``RecurrentNetwork``, the model table ``MODELS``,
  ``build_model`` / ``model_factory`` (re-exported here);
* ``sequence``: ``DigitCNN``, ``SequentialDigitsModel``, ``NumberTranslationModel``,
  ``make_head``;
* ``conv``: convolutions and max-pool as matmuls (``DigitCNN`` on XLA:CPU).
"""

from nalu_jax.models.arithmetic import (
    MODELS,
    ArithmeticNetwork,
    RecurrentNetwork,
    build_model,
    model_factory,
)

__all__ = ["MODELS", "ArithmeticNetwork", "RecurrentNetwork", "build_model", "model_factory"]

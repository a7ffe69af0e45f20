"""TensorBoard event files of a run (tensorboardX), one point per evaluation.

Per sweep setting (tags prefixed ``setting_NNN/`` in a sweep): the quantiles over its runs of
every scalar metric of the evaluation (``valid_mse``/``test_mse``/``sparsity`` for the
arithmetic tasks; per test-length index ``mse_last_j`` etc. for the sequence tasks), of the
training loss, and the counts of runs diverged and (where the experiment judges runs during
training) solved. ``tensorboard --logdir WORKDIR/tensorboard`` shows them.
"""

from __future__ import annotations

import warnings

import numpy as np

QUANTILES = {"min": 0.0, "q25": 0.25, "median": 0.5, "q75": 0.75, "max": 1.0}
MAX_COLUMNS = 32  # metrics with more entries per run (e.g. an error curve) are not logged
FLUSH_SECS = 10  # TensorBoard sees a running run's evaluations at most this late


class EventWriter:
    """Writes one evaluation row of the population's history at a time."""

    def __init__(self, logdir: str, setting_names, run_setting, eval_every: int, solved=None):
        from tensorboardX import FileWriter

        # one event per evaluation, flushed every FLUSH_SECS and at close: an event per
        # scalar went through tensorboardX's inter-process queue one by one and a flush per
        # evaluation fsynced: ~18% of NAC₊'s single-module training loop (WORKSPACE)
        self.writer = FileWriter(logdir, flush_secs=FLUSH_SECS)
        self.prefixes = [f"setting_{h:03d}/" if len(setting_names) > 1 else "" for h in
                         range(len(setting_names))]  # fmt: skip
        self.run_setting = np.asarray(run_setting)
        self.eval_every = eval_every
        self.solved = solved

    def scalars(self, history: dict, e: int) -> dict:
        """``{tag: value}`` of evaluation ``e`` (what ``write`` logs; finite values only)."""
        out = {}
        solved = self.solved(history, e + 1) if self.solved is not None else None
        diverged = np.isnan(history["train_loss"][e]) if e > 0 else None
        for h, prefix in enumerate(self.prefixes):
            runs = self.run_setting == h
            if not runs.any():
                continue
            for name, values in history.items():
                if name == "step":
                    continue
                row = np.asarray(values[e])[runs].reshape(int(runs.sum()), -1)
                if row.shape[1] > MAX_COLUMNS:
                    continue
                for j in range(row.shape[1]):
                    tag = name if row.shape[1] == 1 else f"{name}_{j}"
                    out.update(_quantiles(f"{prefix}{tag}", row[:, j]))
            if diverged is not None:
                out[f"{prefix}runs/diverged"] = float(diverged[runs].sum())
            if solved is not None:
                out[f"{prefix}runs/solved"] = float(np.asarray(solved)[runs].sum())
        return out

    def write(self, history: dict, e: int) -> None:
        from tensorboardX.proto.summary_pb2 import Summary
        from tensorboardX.summary import scalar

        values = [scalar(tag, value).value[0] for tag, value in self.scalars(history, e).items()]
        if values:
            self.writer.add_summary(Summary(value=values), int(history["step"][e]))

    def close(self) -> None:
        self.writer.close()


def _quantiles(tag: str, values) -> dict:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        qs = np.quantile(finite.astype(np.float64), list(QUANTILES.values()))
    return {f"{tag}/{k}": float(q) for k, q in zip(QUANTILES, qs, strict=True)}

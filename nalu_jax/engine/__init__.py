"""The engine: what trains a population of runs.

* ``train``: the training core — ``HParams``, ``TrainState``, ``Recipe`` →
  ``make_train(recipe, config, hparams)`` → ``Trainer`` (pure per-seed init / train / evaluate);
* ``loop``: ``run_population``, the loop over seed blocks on every device (checkpoints, resume,
  ``Interrupted``);
* ``run``: ``run(experiment, config, workdir)`` — sweeps, devices, multi-host slices, memory
  check, TensorBoard, per-setting reports — and ``Population``, what an experiment hands it;
* ``sweep``: ``config.sweep`` → the grid of settings.
"""

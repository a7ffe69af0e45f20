"""What a run stands on around the engine: ``checkpoint`` (orbax, integrity-checked),
``workdir`` (create, lock, tie to one config), ``distributed`` (multi-host start-up and the
process's slice), ``hostenv`` (XLA flags before JAX starts)."""

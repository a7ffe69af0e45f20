"""What a run writes and judges with: ``report`` (atomic files, JSON, CSV, Markdown, the
comparison tables), ``metrics`` (Wilson / t intervals, ``judge_seeds``, ``best_of``),
``plots`` (matplotlib, headless) and ``events`` (TensorBoard)."""

"""Judgement and workdir outputs of the grid-world experiment
(``nalu_jax.experiments.gridworld``).

Per agent and test T: the mean greedy success rate over seeds with a Wilson interval over all
``seeds × episodes`` evaluation episodes (this treats episodes as independent, so it is
narrow), the same mean with a Student-t interval over seeds (``seed_interval``, in
``summary.json``), and the number of seeds that master T (success ≥ ``judge.master_rate``)
with a Wilson interval over seeds. Files are written atomically.
"""

from __future__ import annotations

import io

import numpy as np

from nalu_jax.reporting import metrics as metrics_lib
from nalu_jax.reporting import plots, report
from nalu_jax.reporting.report import csv_text, fmt


def judge(success, diverged, episodes: int, master_rate: float) -> list[dict]:
    """Per test T, population statistics of ``success [S, n_T]`` (diverged seeds count 0)."""
    success = np.where(np.asarray(diverged, bool)[:, None], 0.0, np.asarray(success, np.float64))
    out = []
    for j in range(success.shape[1]):
        col = success[:, j]
        wins = int(np.round(col * episodes).sum())
        mastered = int(np.sum(col >= master_rate - 1e-9))
        out.append(
            {
                "success_rate": float(col.mean()),
                "success_interval": metrics_lib.wilson_interval(wins, col.size * episodes),
                # the same mean with a Student-t interval over seeds (seeds vary more than
                # episodes: the honest interval for comparing agents)
                "seed_interval": metrics_lib.mean_interval(col)[1:],
                "seeds_mastered": mastered,
                "mastered_rate": mastered / col.size,
                "mastered_interval": metrics_lib.wilson_interval(mastered, col.size),
            }
        )
    return out


def agent_summary(config, agent, label, result: dict) -> dict:
    """One agent's summary from its merged run results (``nalu_jax.engine.run.Outcome.results``)."""
    history, times = result["history"], list(config.env.test_times)
    diverged = np.asarray(result["diverged"], bool)
    final = history["success"][-1]  # [S, n_T]
    per_t = judge(final, diverged, int(config.env.eval_episodes), config.judge.master_rate)
    timing = report.timing(result)
    return {
        "agent": agent,
        "label": label,
        "num_seeds": len(diverged),
        "diverged": int(diverged.sum()),
        "per_t": [{"t": t, **row} for t, row in zip(times, per_t, strict=True)],
        "train_success_by_step": {
            int(s): float(np.nanmean(r))
            for s, r in zip(history["step"], history["train_success"], strict=True)
        },
        "compile_time_s": timing["compile_time_s"],
        "wall_time_s": timing["wall_time_s"],
        "seed_updates_per_s": timing["seed_steps_per_s"],
        "resumed_from_step": timing["resumed_from_step"],
    }


def format_summary(summary: dict) -> str:
    """The Markdown table: one row per T, per agent the success rate and seeds mastering (a
    sweep: one section per setting)."""
    if "settings" in summary:
        return report.settings_markdown(summary, format_summary)
    agents, lo, hi = summary["agents"], *summary["train_range"]
    head = ["T"] + [f"{a['label']}: success [95% Wilson]" for a in agents]
    head += [f"{a['label']}: seeds ≥ {summary['master_rate']:g}" for a in agents]
    rand = summary.get("random_policy_success")
    head += ["random policy"] if rand else []
    lines = [
        f"Grid world, {agents[0]['num_seeds']} seeds per agent, {summary['num_steps']} A2C "
        f"updates, {summary['eval_episodes']} greedy episodes per T; training T ∈ [{lo}, {hi}].",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for j, t in enumerate(summary["test_times"]):
        mark = " (train)" if lo <= t <= hi else ""
        cells = [f"{t}{mark}"]
        for a in agents:
            r = a["per_t"][j]
            ci = r["success_interval"]
            cells.append(f"{fmt(r['success_rate'], True)} [{fmt(ci[0], True)}, {fmt(ci[1], True)}]")
        for a in agents:
            r = a["per_t"][j]
            cells.append(f"{r['seeds_mastered']}/{a['num_seeds']}")
        cells += [fmt(rand[j], True)] if rand else []
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for a in agents:
        timing = (
            "no training in this call (resumed from the final checkpoint)"
            if a["resumed_from_step"] == summary["num_steps"]
            else f"{a['wall_time_s']:.0f} s ({a['compile_time_s']:.0f} s compile), "
            f"{a['seed_updates_per_s']:.0f} seed-updates/s"
        )
        lines.append(f"{a['label']}: {a['diverged']} diverged, {timing}.")
    return "\n".join(lines) + "\n"


def success_png(summary: dict) -> bytes:
    """Success rate against T per agent (Wilson bands), training range shaded; seeds mastering."""
    plt = plots.pyplot()
    lo, hi = summary["train_range"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharex=True)
    for ax, key, interval, title in (
        (axes[0], "success_rate", "success_interval", "success rate (all episodes)"),
        (
            axes[1],
            "mastered_rate",
            "mastered_interval",
            f"seeds with success ≥ {summary['master_rate']:g}",
        ),
    ):
        ax.axvspan(lo - 0.5, hi + 0.5, color="0.9", label="training T")
        for a in summary["agents"]:
            t = [r["t"] for r in a["per_t"]]
            y = [r[key] for r in a["per_t"]]
            band = np.asarray([r[interval] for r in a["per_t"]], np.float64)
            line = ax.plot(t, y, marker="o", ms=3, label=a["label"])[0]
            ax.fill_between(t, band[:, 0], band[:, 1], color=line.get_color(), alpha=0.25)
        ax.set_xlabel("command time T")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(title)
        ax.grid(alpha=0.3)
    if summary.get("random_policy_success"):
        axes[0].plot(summary["test_times"], summary["random_policy_success"], "k--", lw=1,
                     label="uniform random policy")  # fmt: skip
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def seeds_csv(config, results, seeds) -> str:
    """One row per (agent, seed): divergence, final training-range success, the memory's
    self-weight and per-T success."""
    columns: dict = {
        "agent": [],
        "seed": [],
        "diverged": [],
        "diverged_at": [],
        "train_success": [],
        "memory_self_weight": [],  # memory cell 0's weight to itself (empty for the LSTM)
    }
    times = list(config.env.test_times)
    for t in times:
        columns[f"success_t{t}"] = []
    for agent, r in results.items():
        h, n = r["history"], len(r["diverged"])
        columns["agent"] += [agent] * n
        columns["seed"] += [int(s) for s in seeds]
        columns["diverged"] += np.asarray(r["diverged"]).astype(int).tolist()
        columns["diverged_at"] += np.asarray(r["diverged_at"]).astype(int).tolist()
        columns["train_success"] += h["train_success"][-1].astype(float).tolist()
        memory = h.get("memory_self_weight")  # [E, n, K] for memory agents
        columns["memory_self_weight"] += (
            [float("nan")] * n if memory is None else memory[-1][:, 0].astype(float).tolist()
        )
        for j, t in enumerate(times):
            columns[f"success_t{t}"] += h["success"][-1][:, j].astype(float).tolist()
    return csv_text(columns)


def metrics_jsonl(results) -> str:
    """One line per (agent, evaluation): training loss and success quantiles over seeds."""
    lines = []
    for agent, r in results.items():
        h = r["history"]
        for e, step in enumerate(h["step"]):
            loss = h["train_loss"][e]
            row = {
                "agent": agent,
                "step": int(step),
                "train_loss": None if np.all(np.isnan(loss)) else metrics_lib.quantiles(loss),
                "train_success": metrics_lib.quantiles(h["train_success"][e]),
                "success_mean": np.nanmean(h["success"][e], axis=0).tolist(),
            }
            lines.append(report.dumps(row))
    return "\n".join(lines) + "\n"


def write_all(config, workdir: str, results: dict, seeds, label_fn, random_success=None) -> dict:
    """Judge every agent's population and write the workdir's result files; the summary.

    ``results``: agent → its merged run results (history, diverged, diverged_at, timing);
    ``seeds``: the seed number of each run.

    ``random_success``: ``[n_T]`` success rate of the uniform random policy on the same
    evaluation episodes (a reference line in the table and plot), or None.
    """
    summary = {
        "experiment": "gridworld",
        "num_steps": int(config.num_steps),
        "eval_episodes": int(config.env.eval_episodes),
        "train_range": [int(config.env.train_t_min), int(config.env.train_t_max)],
        "test_times": [int(t) for t in config.env.test_times],
        "master_rate": float(config.judge.master_rate),
        "root_seed": int(config.seed),
        "first_seed": int(config.first_seed),
        "agents": [agent_summary(config, a, label_fn(config, a), r) for a, r in results.items()],
        "random_policy_success": None
        if random_success is None
        else list(map(float, random_success)),
    }
    files = {
        "seeds.csv": seeds_csv(config, results, seeds),
        "metrics.jsonl": metrics_jsonl(results),
        "summary.json": report.dumps(summary) + "\n",
        "summary.md": format_summary(summary),
        "success.png": lambda: success_png(summary),
    }
    report.write_files(workdir, files)
    return summary

"""``memengine eval``: retrieval evaluations (``eval locomo``: evidence recall@k of the recall path on LoCoMo files,
issue #3 §5; ``eval recall-set``: the same on a multilingual recall set with dev/test splits, issue #28 item 4). The
evaluation itself is ``engine.ops.eval_locomo``; this module parses the options, draws the progress bar and prints the
table or ``--json``. ``app`` is mounted as ``memengine eval`` by ``engine.cli.main``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from memengine.engine.cli.options import Grid, JsonOpt, emit_json, err, lifespan, out, run, settings_from_options

app = typer.Typer(help="Retrieval evaluations.", no_args_is_help=True)


def _cutoffs(ks: str) -> list[int]:
    """``--k``'s comma-separated cut-offs, sorted and distinct, each in 1..100; exits 2 with the reason otherwise."""
    try:
        cutoffs = sorted({int(x) for x in ks.split(",") if x.strip()})
    except ValueError:
        err.print(f"[red]--k must be comma-separated integers[/red], got {ks!r}")
        raise typer.Exit(2) from None
    if not cutoffs or min(cutoffs) < 1 or max(cutoffs) > 100:
        err.print("[red]--k values must be in 1..100[/red]")
        raise typer.Exit(2)
    return cutoffs


@app.command("locomo")
def eval_locomo(
    files: list[Path] = typer.Argument(..., exists=True, dir_okay=False, help="LoCoMo conversation .json files."),
    ks: str = typer.Option("5,10,20", "--k", help="Comma-separated cut-offs."),
    as_of_end: bool = typer.Option(False, "--as-of-end", help="Time decay measured from one day after the "
                                   "conversation's last turn (as an agent asking right after it), not from now."),
    contexts: str = typer.Option("", "--context", help="Comma-separated windows (tokens), e.g. 2000,4000,8000: "
                                 "evidence in context per window beside recent_only and recall_packed (issue #14)."),
    context_query: str = typer.Option("question,none,live", "--context-query", help="Comma-separated: what the "
                                      "context is asked with: question | none (query=\"\") | live (the question "
                                      "recorded as the thread's latest user turn, no query given) | last-user."),
    core_only: bool = typer.Option(False, "--core-only", help="Ablation: no enricher (no summaries, memories or "
                                   "pruning); by default the engine runs as `memengine up` runs it (issue #27)."),
    json_out: bool = JsonOpt,
) -> None:
    """Evidence recall@k of the recall path, per LoCoMo category, plus recall latency.

    Each file goes into a fresh tenant (thread locomo-<stem>); every question of categories 1-4 with evidence is
    asked through the recall RPC. Example: memengine eval locomo ../shared/data/locomo-dev/*.json --json
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from memengine.engine.ops.eval_context import CATEGORIES, QUERY_MODES  # lazy (engine.cli.options, "Import cost")
    from memengine.engine.ops.eval_locomo import run_eval

    cutoffs = _cutoffs(ks)
    try:
        windows = sorted({int(x) for x in contexts.split(",") if x.strip()})
    except ValueError:
        err.print(f"[red]--context must be comma-separated integers[/red], got {contexts!r}")
        raise typer.Exit(2) from None
    if windows and min(windows) < 100:
        err.print("[red]--context windows must be >= 100 tokens[/red]")
        raise typer.Exit(2)
    query_modes = [m.strip() for m in context_query.split(",") if m.strip()]
    if not query_modes or any(m not in QUERY_MODES for m in query_modes):
        err.print(f"[red]--context-query must be among {', '.join(QUERY_MODES)}[/red], got {context_query!r}")
        raise typer.Exit(2)
    settings = settings_from_options()
    show = not json_out and sys.stderr.isatty()

    async def main() -> dict[str, Any]:
        # the path users run (issue #27 item 0): every projector, the enricher and its pruner, as `up` runs them
        roles = {"projector", "query"} if core_only else {"projector", "query", "enricher"}
        async with lifespan(settings, roles=roles, run_projector=False) as engine:
            with Progress(TextColumn("asking"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                          console=err, disable=not show, transient=True) as bar:
                task = bar.add_task("eval", total=None)
                return await run_eval(engine, files, cutoffs, quiet=json_out, as_of_end=as_of_end,
                                      contexts=windows, context_query=query_modes,
                                      progress=lambda d, t: bar.update(task, completed=d, total=t))

    result = run(main)
    if json_out:
        emit_json(result)
        return
    several = "context_evidence" in result
    table = Grid(f"LoCoMo evidence recall ({result['questions']} questions)",
                 ("category", "n", *(f"R@{k}" for k in cutoffs)), titled=several)
    table.add_row("all", str(result["questions"]), *[f"{result['recall_at'][str(k)]:.3f}" for k in cutoffs])
    for name, c in result["by_category"].items():
        table.add_row(name, str(c["questions"]), *[f"{c['recall_at'][str(k)]:.3f}" for k in cutoffs])
    table.print()
    out.print(f"latency p50 {result['latency_ms']['p50']} ms, p95 {result['latency_ms']['p95']} ms")
    out.print(f"asked {result['asked_via']}")
    out.print(f"engine: {result['engine_path']}")
    if "context_evidence" in result:
        names = list(CATEGORIES.values())
        ctab = Grid("evidence in context (mean share of evidence turns present)",
                    ("window", "assembly", "all", *names, "tokens used"), titled=True)
        for w, row in result["context_evidence"].items():
            for name, m in row.items():
                ctab.add_row(w, name, f"{m['all']:.3f}",
                             *["-" if m["by_category"][c] is None else f"{m['by_category'][c]:.3f}" for c in names],
                             f"{m['tokens_used']:.0f}")
        ctab.print()


@app.command("recall-set")
def eval_recall_set(
    root: Path = typer.Argument(..., exists=True, file_okay=False, help="Recall set directory (dev/, test/)."),
    split: str = typer.Option("dev", "--split", help="dev | test | all."),
    ks: str = typer.Option("3,10", "--k", help="Comma-separated cut-offs."),
    misses: Path | None = typer.Option(None, "--misses", help="Write the questions missed at the smallest k "
                                       "(with the top hits) to this JSON file, for error analysis on dev."),
    json_out: bool = JsonOpt,
) -> None:
    """Evidence recall@k on a recall set, overall, same-language and cross-lingual, per split.

    Example: memengine eval recall-set tests/data/zh_recall --split test  (tune on dev; report test.)
    """
    import json

    from memengine.engine.ops.eval_recall_set import SPLITS, RecallSetError, run_recall_set

    cutoffs = _cutoffs(ks)
    if split not in (*SPLITS, "all"):
        err.print(f"[red]--split must be dev, test or all[/red], got {split!r}")
        raise typer.Exit(2)
    splits = SPLITS if split == "all" else (split,)
    settings = settings_from_options()
    missed: list[dict[str, Any]] = []

    async def main() -> dict[str, Any]:
        async with lifespan(settings, roles={"projector", "query"}, run_projector=False) as engine:
            return await run_recall_set(engine, root, splits, cutoffs, quiet=True,
                                        misses=missed if misses is not None else None)

    try:
        result = run(main)
    except RecallSetError as exc:
        err.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None
    if misses is not None:
        misses.write_text(json.dumps(missed, ensure_ascii=False, indent=1), encoding="utf-8")
    if json_out:
        emit_json(result)
        return
    for name, groups in result.items():
        table = Grid(f"recall set {root.name}, split {name}", ("questions", "n", *(f"R@{k}" for k in cutoffs)),
                     titled=True)
        for group, g in groups.items():
            table.add_row(group, str(g["questions"]),
                          *[f"{g['recall_at'][str(k)]:.3f}" if g["recall_at"] else "-" for k in cutoffs])
        table.print()

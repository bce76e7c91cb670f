"""Print a summary.csv as a markdown table: rows = x values, columns = mechanisms (mean error).

    dpcov table results/dong2022/fig3a/summary.csv N [--panel n] [--metric fro]

--metric defaults to the first metric in the summary.
"""
from __future__ import annotations

import argparse

import pandas as pd


def markdown(summary: pd.DataFrame, x: str, metric: str, columns: str = "label") -> str:
    table = summary.pivot_table(index=x, columns=columns, values=f"err_{metric}_mean", sort=False)
    table = table[[c for c in summary[columns].drop_duplicates() if c in table]].sort_index()
    names = [f"{columns}={c:g}" if not isinstance(c, str) else c for c in table.columns]
    head = f"| {x} | " + " | ".join(names) + " |"
    rule = "|---" * (len(table.columns) + 1) + "|"
    rows = [f"| {i:g} | " + " | ".join(f"{v:.3g}" for v in row) + " |" for i, row in table.iterrows()]
    return "\n".join([head, rule, *rows])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("summary")
    parser.add_argument("x")
    parser.add_argument("--panel")
    parser.add_argument("--metric", help="e.g. fro, fro_rel, l2, reg (default: the first in the file)")
    parser.add_argument("--columns", default="label", help="one column per value of this (default: mechanism)")
    args = parser.parse_args(argv)
    summary = pd.read_csv(args.summary)
    metrics = [c[4:-5] for c in summary.columns if c.startswith("err_") and c.endswith("_mean")]
    if args.metric is None:
        args.metric = metrics[0]
    elif args.metric not in metrics:
        parser.error(f"metric {args.metric!r} is not in {args.summary}; it has {metrics}")
    if args.panel:
        for value, part in summary.groupby(args.panel):
            value = value if isinstance(value, str) else f"{value:g}"
            print(f"\n{args.panel} = {value}\n\n{markdown(part, args.x, args.metric, args.columns)}")
    else:
        print(markdown(summary, args.x, args.metric, args.columns))


if __name__ == "__main__":
    main()

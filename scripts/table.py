"""Print a summary.csv as a markdown table: rows = x values, columns = mechanisms (mean error).

    python scripts/table.py results/dong2022/fig3a/summary.csv N [--panel n] [--metric fro]
"""
from __future__ import annotations

import argparse

import pandas as pd


def markdown(summary: pd.DataFrame, x: str, metric: str = "fro", columns: str = "label") -> str:
    table = summary.pivot_table(index=x, columns=columns, values=f"err_{metric}_mean", sort=False)
    table = table[[c for c in summary[columns].drop_duplicates() if c in table]].sort_index()
    names = [f"{columns}={c:g}" if not isinstance(c, str) else c for c in table.columns]
    head = f"| {x} | " + " | ".join(names) + " |"
    rule = "|---" * (len(table.columns) + 1) + "|"
    rows = [f"| {i:g} | " + " | ".join(f"{v:.3g}" for v in row) + " |" for i, row in table.iterrows()]
    return "\n".join([head, rule, *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("summary")
    parser.add_argument("x")
    parser.add_argument("--panel")
    parser.add_argument("--metric", default="fro")
    parser.add_argument("--columns", default="label", help="one column per value of this (default: mechanism)")
    args = parser.parse_args()
    summary = pd.read_csv(args.summary)
    if args.panel:
        for value, part in summary.groupby(args.panel):
            value = value if isinstance(value, str) else f"{value:g}"
            print(f"\n{args.panel} = {value}\n\n{markdown(part, args.x, args.metric, args.columns)}")
    else:
        print(markdown(summary, args.x, args.metric, args.columns))


if __name__ == "__main__":
    main()

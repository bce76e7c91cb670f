"""Print a summary.csv as a markdown table: rows = x values, columns = mechanisms (mean error).

    python scripts/table.py results/dong2022/fig3a/summary.csv N [--panel n] [--metric fro]
"""
from __future__ import annotations

import argparse

import pandas as pd


def markdown(summary: pd.DataFrame, x: str, metric: str = "fro") -> str:
    table = summary.pivot_table(index=x, columns="label", values=f"err_{metric}_mean", sort=False)
    table = table[[c for c in summary["label"].drop_duplicates() if c in table]].sort_index()
    head = f"| {x} | " + " | ".join(table.columns) + " |"
    rule = "|---" * (len(table.columns) + 1) + "|"
    rows = [f"| {i:g} | " + " | ".join(f"{v:.3g}" for v in row) + " |" for i, row in table.iterrows()]
    return "\n".join([head, rule, *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("summary")
    parser.add_argument("x")
    parser.add_argument("--panel")
    parser.add_argument("--metric", default="fro")
    args = parser.parse_args()
    summary = pd.read_csv(args.summary)
    if args.panel:
        for value, part in summary.groupby(args.panel):
            print(f"\n{args.panel} = {value:g}\n\n{markdown(part, args.x, args.metric)}")
    else:
        print(markdown(summary, args.x, args.metric))


if __name__ == "__main__":
    main()

"""Figures in the papers' layout, drawn from summary.csv only."""

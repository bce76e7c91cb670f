"""Writes data/examples/table.csv: 1000 rows of synthetic, correlated data with named columns (seed 0),
the example file of dataset ``table`` (docs/data.md; `dpcov run experiment=table_rho scale=smoke`)."""
from pathlib import Path

import numpy as np
import pandas as pd

rng = np.random.default_rng(0)
latent = rng.standard_normal((1000, 2))
mixing = np.array([[1.0, 0.8, 0.2, 0.0, 0.5], [0.0, 0.4, 1.0, 0.9, -0.3]])
values = latent @ mixing + 0.3 * rng.standard_normal((1000, 5))
frame = pd.DataFrame(values.round(4), columns=["height", "weight", "income", "rent", "age"])
frame["city"] = rng.choice(["Lyon", "Oslo", "Kyoto"], size=1000)  # a text column: not numeric
frame.to_csv(Path(__file__).resolve().parents[2] / "data" / "examples" / "table.csv", index=False)

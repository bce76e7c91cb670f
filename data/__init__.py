"""Dataset loaders: each returns the n x d array already scaled into the ball of radius 1."""

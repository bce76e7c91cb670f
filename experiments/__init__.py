"""Experiment harness: config validation, grid expansion, seeding, parallel trials, results, resume."""

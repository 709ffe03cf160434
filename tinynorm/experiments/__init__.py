"""Experiments that reproduce what the normalization papers report, each with a quick and a full mode."""

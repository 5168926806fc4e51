"""Ahead-of-time compilation of kernel specs into CompiledKernels (see base.py)."""

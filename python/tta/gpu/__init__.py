"""GPU-side checks and measurements (run on a machine with an NVIDIA GPU):

* ``python -m tta.gpu.build_manifest OUT.json`` (CPU is enough): compile the example kernels;
* ``python -m tta.gpu.conformance OUT.json``: launch each one as TensorRT's AOT runtime would;
* ``python -m tta.gpu.bench``: launch-path and bandwidth benchmarks.
"""

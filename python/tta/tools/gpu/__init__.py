"""GPU-side checks and measurements (run on a machine with an NVIDIA GPU):

* ``python -m tta.tools.gpu.build_manifest OUT.json`` (CPU is enough): compile the example kernels;
* ``python -m tta.tools.gpu.conformance OUT.json``: launch each one as TensorRT's AOT runtime would;
* ``python -m tta.tools.gpu.bench``: launch-path and bandwidth benchmarks.
"""

"""What tta finds on this machine and does with it: ``tta doctor`` (``doctor.py``), the CUDA
driver probe behind the PTX ISA cap (``cuda_driver.py``) and the TensorRT bugs tta knows of
(``known_bugs.py``)."""

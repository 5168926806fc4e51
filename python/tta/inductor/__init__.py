"""tta on PyTorch's own compilers: each plugin op with a Triton kernel becomes a
``torch.library.triton_op`` (``triton_ops.py``) that Inductor compiles and embeds; the others run
their region body (``program.py``); ``compile.py`` drives ``torch.compile`` and AOTInductor."""

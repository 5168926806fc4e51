"""TensorRT Quickly Deployable Plugins (``tensorrt.plugin``) for tta ops, built ahead of time.

Interface used by the Torch-TensorRT side (converter, lowering pass, ``tta.compile``):

``register(op_name, *, sm=90, max_ptx=90) -> str``
    Define plugin ``"tta::<op_name>"`` for the ``tta::<op_name>`` torch op (``trtp.register``,
    ``trtp.autotune``, ``trtp.aot_impl``) and return its id. Idempotent and thread-safe: the
    trtp definitions are made once per process; a later call only updates the target
    (``sm``: compute capability the kernels are compiled for; ``max_ptx``: newest PTX ISA the
    target driver JIT-compiles, Triton's spelling, 90 = ISA 9.0). The op must have been created
    by ``tta.ops.ensure_op`` (``tta.rewrite`` / the lowering pass). Region plugins take no
    attributes: call the op as ``trtp.op.tta.<op_name>(*itensors)``.

``restrict_tactics(op_name, dim_ranges) -> list[int]``
    ``dim_ranges[k][j] = (min, max)`` of input k's dim j over the optimization profile (with
    several profiles: the smallest min and largest max). Compiles the op's kernels for the
    target (cached) and keeps offered only the tactics whose guards (conditions the kernel was
    compiled under, e.g. ``i0_1 <= 1024``) hold for every shape in those ranges. Returns the
    kept tactic ids; raises ``PluginError`` naming the range and the guard when none is left.
    Call it before the engine build (the converter does, per plugin layer).

``tactics(op_name) -> dict[int, CompiledKernel]``
    Every tactic id of the op and its kernel (compiling if needed).
"""

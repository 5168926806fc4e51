"""tta's TensorRT integration: QDP AOT plugins (``qdp.py``) for the ``tta::*`` ops."""

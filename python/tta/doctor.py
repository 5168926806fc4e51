"""``python -m tta.doctor``: the same as ``tta doctor`` (``tta/tools/doctor.py``)."""

import sys

from .tools.doctor import main

if __name__ == "__main__":
    sys.exit(main())

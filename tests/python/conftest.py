import os
import sys

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
if FIXTURES not in sys.path:
    sys.path.insert(0, FIXTURES)

"""Make the multi-rank thread harness (`thread_ranks`) importable under any pytest import mode."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

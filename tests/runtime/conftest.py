"""Make the IR-building helpers (`rt_ir`) importable under any pytest import mode."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

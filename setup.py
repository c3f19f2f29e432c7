"""Build script for the one optional C extension; everything else about the package lives in pyproject.toml.

playbook/readers/_native.c parses clean nvidia-smi CSV rows in one pass and moves a table's columns into
(gpu, time) order (readers/native.py loads it).
It is optional: where no C compiler is found the build goes on without it and the reader takes its pure-Python
(pyarrow) path, which gives the same tables, only slower.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("playbook.readers._native", ["playbook/readers/_native.c"],
                             optional=True, extra_compile_args=["-O2"])])

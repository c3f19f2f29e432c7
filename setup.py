"""Build script for the one optional C extension; everything else about the package lives in pyproject.toml.

playbook/readers/nvidia_smi/_native.c parses clean nvidia-smi CSV rows in one pass (readers/nvidia_smi/convert.py).
It is optional: where no C compiler is found the build goes on without it and the reader takes its pure-Python
(pyarrow) path, which gives the same tables, only slower.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("playbook.readers.nvidia_smi._native", ["playbook/readers/nvidia_smi/_native.c"],
                             optional=True, extra_compile_args=["-O2"])])

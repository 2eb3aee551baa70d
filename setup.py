"""Builds the optional C extension of the compiled env engine (everything else is in
pyproject.toml). Without a C compiler the install still succeeds, with the Python engine
only: the extension is marked optional."""

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

extension = Extension(
    "gpushare_env.compiled._core",
    ["gpushare_env/compiled/_core.pyx"],
    include_dirs=[numpy.get_include()],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    # no fused multiply-add: the compiled engine must round as the Python reference does
    extra_compile_args=["-O2", "-ffp-contract=off"],
    optional=True,
)

setup(ext_modules=cythonize([extension], language_level=3, quiet=True))

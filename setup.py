"""Builds the simulator's compiled core, the package's one engine (everything else is in
pyproject.toml). It needs a C compiler: without one the install fails here, with the
compiler's error, rather than leaving a package that cannot simulate."""

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

extension = Extension(
    "gpushare_env.compiled._core",
    ["gpushare_env/compiled/_core.pyx"],
    include_dirs=[numpy.get_include()],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    # no fused multiply-add: results stay the same bit for bit across compilers and CPUs
    extra_compile_args=["-O2", "-ffp-contract=off"],
)

setup(ext_modules=cythonize([extension], language_level=3, quiet=True))

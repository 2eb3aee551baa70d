"""Builds the simulator's compiled core, the package's one engine (FGD's placement experiment
runs on it too; everything else is in pyproject.toml). It needs a C compiler: without one
the install fails here, with the compiler's error, rather than leaving a package that
cannot simulate."""

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

# no fused multiply-add: results stay the same bit for bit across compilers and CPUs
COMPILE_ARGS = ["-O2", "-ffp-contract=off"]
NUMPY_MACROS = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]

extensions = [
    Extension(
        "gpushare_env.compiled._core",
        ["gpushare_env/compiled/_core.pyx"],
        include_dirs=[numpy.get_include()],
        define_macros=NUMPY_MACROS,
        extra_compile_args=COMPILE_ARGS,
    ),
]

setup(ext_modules=cythonize(extensions, language_level=3, quiet=True))

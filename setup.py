"""Package discovery that pyproject.toml alone cannot express: the top-level kernels/ folder
ships inside the wheel as the package ``microtorch.kernels`` (its *.cu sources are data)."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["microtorch", "microtorch.*"]) + ["microtorch.kernels"],
    package_dir={"microtorch.kernels": "kernels"},
    package_data={"microtorch": ["py.typed"], "microtorch.kernels": ["*.cu"]},
)

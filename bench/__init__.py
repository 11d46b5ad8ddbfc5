"""Benchmarks of Patience Server, run as ``python -m bench [NAME [OPTIONS]]``.

Each benchmark is a module of this package with ``main(argv) -> int``, listed in
:data:`bench.__main__.BENCHMARKS`.  A benchmark reports what it measures and never fails
on a time.
"""

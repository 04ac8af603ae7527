"""Only the compiled SimHash kernel; every other setting is in pyproject.toml.

optional=True: without a C compiler the install still succeeds and simhash.py computes
the same fingerprints with numpy."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("crawl_assets.crawler.content.simhash_kernel",
                             ["crawl_assets/crawler/content/simhash_kernel.c"], optional=True)])

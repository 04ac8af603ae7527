"""Only the compiled kernels; every other setting is in pyproject.toml.

optional=True: without a C compiler the install still succeeds, and the Python code beside
each kernel computes the same values (simhash.py's numpy fingerprint, volatile_parts.py's
byte search)."""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("crawl_assets.crawler.content.simhash_kernel",
              ["crawl_assets/crawler/content/simhash_kernel.c"], optional=True),
    Extension("crawl_assets.crawler.content.bytes_kernel",
              ["crawl_assets/crawler/content/bytes_kernel.c"], optional=True),
])

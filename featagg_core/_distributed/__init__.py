"""Private modules of :mod:`featagg_core.distributed` (the Dask twins); import from there."""

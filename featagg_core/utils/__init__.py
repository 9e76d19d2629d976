"""Small tools every layer above the kernels uses; no algorithm of its own.

``validation`` (declared parameter constraints, input checks, one error wording),
``docstrings`` (numpydoc fragments filled in at import), ``cancel`` (cooperative
cancellation), ``polling`` (progress while one long kernel runs), ``products`` (exactly
summed sparse products), ``bounded`` (reading untrusted zip / npy / JSON / XML within a
budget), ``timing`` (fit timings with their spread, and when a speed-up may be stated).
"""

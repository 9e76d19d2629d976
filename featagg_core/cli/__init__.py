"""The ``featagg`` command line (``python -m featagg_core``): the run model without a browser.

``parser`` (the argument parser), ``triage`` (the triage command).
"""

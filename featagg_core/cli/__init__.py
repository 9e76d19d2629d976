"""The ``featagg`` command line (``python -m featagg_core``): the run model without a browser.

``main`` (run one command: one JSON document on stdout, one-line errors, Ctrl-C),
``parser`` (the argument parser and its option types), ``command`` (what every command
shares: errors, progress on stderr, reading DATA, the split, a run), and the commands by
the data they take: ``info`` (any), ``multilabel`` (agglomerate, train, predict, evaluate),
``graph`` (select-features), ``table`` (compress), ``triage`` (the triage report).
"""

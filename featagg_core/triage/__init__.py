"""Quick dataset triage: a bounded battery of experiments and the report a person hands on.

``battery`` (the experiments and the verdict), ``report`` (the self-contained HTML report
and its JSON).
"""

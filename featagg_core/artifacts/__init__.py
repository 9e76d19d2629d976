"""Saving and loading fitted objects without pickle.

``store`` (save_artifact / load_artifact, bundles: the zip of a JSON manifest and ``.npy``
arrays), ``checks/`` (every field and array of a state declared, one family module per
method, and checked before an estimator is rebuilt), ``registry`` (a leaf: the classes an
artifact may hold, ArtifactError).
"""

"""Saving and loading fitted objects without pickle.

``store`` (save_artifact / load_artifact, bundles), ``checks`` (every field and array of a
state declared and checked before an estimator is rebuilt), ``registry`` (a leaf: the
classes an artifact may hold, ArtifactError).
"""

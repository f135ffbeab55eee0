"""Analyses over an attention store, one module per paper section.

The protocol every analysis follows (``Analysis``, ``register``, ``run_analysis``)
is in :mod:`headatlas.analyses.base`. This package imports nothing, so a rule
that imports one analysis module depends on that module alone; importing a
module registers its analyses by name.

* :mod:`~headatlas.analyses.surface`: relative position, special tokens, entropy (Clark §3)
* :mod:`~headatlas.analyses.syntax`: heads as dependency parsers (Clark §4.2)
* :mod:`~headatlas.analyses.coref`: coreference heads (Clark §4.3)
* :mod:`~headatlas.analyses.probes`: probing classifiers (Clark §5, Coenen et al.); their torch
  modules in :mod:`~headatlas.analyses.probe_models`
* :mod:`~headatlas.analyses.clustering`: distances between heads (Clark §6)
* :mod:`~headatlas.analyses.gradients`: gradient importance (Clark §3.2; re-runs the model)
* :mod:`~headatlas.analyses.headtypes`: distance features and head types (Guan et al.)
* :mod:`~headatlas.analyses.norms`: attention weighted by value-vector norms (Kobayashi et al. 2020)
* :mod:`~headatlas.analyses.rollout`: attention rollout from α and from the norm maps (Abnar & Zuidema 2020)
* :mod:`~headatlas.analyses.sinks`: attention sinks per head and token role (Gu et al. 2025)

Every analysis of the maps also runs on Kobayashi's norm-weighted maps:
``run_analysis(..., weighting="norm")`` (:mod:`headatlas.weightings`).
"""


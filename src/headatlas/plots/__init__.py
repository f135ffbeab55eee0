"""Figures, one module per analysis, mirroring :mod:`headatlas.analyses`.

* :mod:`~headatlas.plots.base`: what every figure shares: the one saving path
  (:func:`~headatlas.plots.base.atomic_savefig`: SVG or PNG by suffix, whole or
  not at all, byte-stable SVG), the one captioning path
  (:func:`~headatlas.plots.base.captioned_figure`), the layer x head heat map
  and the attention-lines picture, colours and labels;
* :mod:`~headatlas.plots.surface` (Clark et al. 2019 Fig. 1, 2, 4),
  :mod:`~headatlas.plots.syntax` (Fig. 5, Table 1), :mod:`~headatlas.plots.coref`
  (§4.3), :mod:`~headatlas.plots.clustering` (Fig. 6),
  :mod:`~headatlas.plots.gradients` (Fig. 3), :mod:`~headatlas.plots.probes`
  (§5, Table 3), :mod:`~headatlas.plots.headtypes` (Guan et al. 2020 Fig. 1-5),
  :mod:`~headatlas.plots.ablation` (Guan et al. Tables 2-3),
  :mod:`~headatlas.plots.norms` (Kobayashi et al. 2020 Fig. 3-4),
  :mod:`~headatlas.plots.rollout` (attention rollout).

Each figure is a function over a table (or one example) that writes one file
and carries a caption (model, corpus, N, deviations) at its bottom. Figures
are built with :class:`matplotlib.figure.Figure` directly, not pyplot, so
nothing depends on a display or on global figure state.

This package imports none of its modules: a script that imports one plot
module imports only that module and :mod:`~headatlas.plots.base`, so the
workflow reruns only the figures whose code changed.
"""

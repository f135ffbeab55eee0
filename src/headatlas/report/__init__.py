"""The report: what a run found, read from the tables the analyses wrote (nothing recomputed).

* :mod:`~headatlas.report.atlas`: one profile per head (``heads.csv``), joined from the declared per-head tables
* :mod:`~headatlas.report.atlas_page`: the atlas page (``atlas.html``)
* :mod:`~headatlas.report.scorecard`: every declared claims table of every model in one table
* :mod:`~headatlas.report.findings`: the landing page's summary
* :mod:`~headatlas.report.compare`: cross-model tables
* :mod:`~headatlas.report.htmltable`, :mod:`~headatlas.report.tablepages`: key tables as HTML
* :mod:`~headatlas.report.labelling`: hand-labelled attention maps (sample, draw, freeze)
"""

"""Interventions: change the heads of a task model and measure the task.

* :mod:`~headatlas.interventions.ablation`: Guan et al.'s head-type ablation (the attention function)
* :mod:`~headatlas.interventions.grid`: the ablation grid of a task model
* :mod:`~headatlas.interventions.importance`: single heads disabled, Michel et al.'s importance, pruning

The tasks themselves (a model class, a reader, an evaluator, a metric) are :mod:`headatlas.tasks`.
"""

"""headatlas: what do the attention heads of BERT-family encoders look at?

Data flow: corpora -> extraction -> HDF5 store -> analyses -> report.
"""

__version__ = "0.1.0"

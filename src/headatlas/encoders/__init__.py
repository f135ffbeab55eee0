"""Encoders: loading a model, what it can do, and running it over a corpus into a store.

* :mod:`~headatlas.encoders.models`: load an encoder and its tokenizer (hub id, folder, package)
* :mod:`~headatlas.encoders.capabilities`: what a checkpoint can serve, read once when the config loads
* :mod:`~headatlas.encoders.layouts`: the table of attention layouts (which tensors hold W_V, W_O)
* :mod:`~headatlas.encoders.valuenorms`: Kobayashi's value-vector norms in the forward pass
* :mod:`~headatlas.encoders.inputs`: words -> wordpieces -> padded batches of similar length
* :mod:`~headatlas.encoders.batching`: padding into tensors, and packing a batch's maps for the store
* :mod:`~headatlas.encoders.extract`: the extraction loop (forward, maps, write-behind)
* :mod:`~headatlas.encoders.allocator`: per-batch buffers from the heap
* :mod:`~headatlas.encoders.modelbuild`: model folders assembled from pinned PyPI parts
* :mod:`~headatlas.encoders.lazy`: torch imported at its first use (the reading rules of model-running analyses skip it)
"""

"""``python -m headatlas.store --markdown``: print the schema as Markdown (docs/store.md)."""

from headatlas.store.schema import main

main()

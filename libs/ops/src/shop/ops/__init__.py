"""Operating the running shop (see libs/ops/README.md)."""
